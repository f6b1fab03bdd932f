"""Enforce the box's memory cap and say, after a death, whether the cap was the killer.

With a memory cgroup the kernel's OOM killer does it, and the group's `oom_kill` count
tells us afterwards. Without one, `Watchdog` is an emulation outside the server: it sums the
RSS of the server's process tree every few tens of milliseconds and SIGKILLs the tree above the cap.
"""

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable

import psutil

from app.box.cgroups import BoxCgroup

log = logging.getLogger(__name__)

MEMORY_CAP = "memory_cap"


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants (0 once it is gone)."""
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            total += proc.memory_info().rss
    return total


def death_cause(returncode: int, oom_kills_during: int, watchdog_fired: bool) -> tuple[str, str]:
    """(cause, sentence) for a server that exited with `returncode` (negative: the signal that killed it)."""
    if watchdog_fired:
        return MEMORY_CAP, "the watchdog SIGKILLed it above the memory cap (an emulation of the OOM killer)"
    if oom_kills_during > 0 and returncode == -signal.SIGKILL:
        return MEMORY_CAP, "the kernel's OOM killer killed it at the cgroup's memory cap"
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        return f"signal {-returncode}", f"killed by {name}"
    return f"exit {returncode}", f"exited with status {returncode}"


class Watchdog:
    """`Watchdog(cap).watch(pid)` on its own thread; `fired` says whether it did the killing.

    An enforcer, not a measurement: it keeps no peak (the benchmarks' one sampler is
    kit/measure.py's `PeakRss`, which the server side does not import).
    `cap_now`, when given, is asked for the cap at every look (the instructor's knob, app/box/kept.py).
    """

    def __init__(self, cap_bytes: int, every_s: float = 0.05, cap_now: Callable[[], int] | None = None) -> None:
        self.cap_bytes = cap_bytes
        self.cap_now = cap_now
        self.every_s = every_s
        self.fired = False
        self.killed_at_bytes = 0  # the tree's RSS when it fired: the incarnation's peak, as far as it looked
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, pid: int) -> None:
        self.fired = False
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(pid,), name="box-memory-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self, pid: int) -> None:
        while not self._stop.is_set():
            rss = tree_rss(pid)
            if self.cap_now is not None:
                self.cap_bytes = self.cap_now()
            if rss > self.cap_bytes:
                self.fired = True
                self.killed_at_bytes = rss
                log.error(
                    "Watchdog: the box uses %.0f MiB, over its %.0f MiB cap: SIGKILL.",
                    rss / 2**20,
                    self.cap_bytes / 2**20,
                )
                kill_tree(pid)
                return
            self._stop.wait(self.every_s)


def kill_tree(pid: int) -> None:
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process(pid).children(recursive=True):
            with contextlib.suppress(psutil.Error):
                child.kill()
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


class MemoryEnforcer:
    """One incarnation at a time: `start(pid)` before it runs, `cause(returncode)` after it died."""

    def __init__(
        self, mode: str, cap_bytes: int, group: BoxCgroup | None, cap_now: Callable[[], int] | None = None
    ) -> None:
        self.mode = mode
        self.group = group if mode == "cgroup" else None
        self.watchdog = Watchdog(cap_bytes, cap_now=cap_now) if mode == "watchdog" else None
        self._oom_before = 0
        self._peak_is_this_incarnations = False

    def start(self, pid: int) -> None:
        if self.group is not None:
            self._oom_before = self.group.oom_kills()
            self._peak_is_this_incarnations = self.group.reset_memory_peak()
        if self.watchdog is not None:
            self.watchdog.watch(pid)

    def cause(self, returncode: int) -> tuple[str, str]:
        fired = False
        if self.watchdog is not None:
            self.watchdog.stop()
            fired = self.watchdog.fired
        ooms = self.group.oom_kills() - self._oom_before if self.group is not None else 0
        return death_cause(returncode, ooms, fired)

    def peak_bytes(self) -> int | None:
        """After a death, the dead incarnation's highest memory: the group's peak (reset as it started) or what the
        watchdog killed it at; None where neither is known. A burst that killed the box ends before the page's
        panel samples its peak: this is what the page's record quotes instead."""
        if self.group is not None and self._peak_is_this_incarnations:
            return self.group.memory_peak() or None
        if self.watchdog is not None and self.watchdog.fired:
            return self.watchdog.killed_at_bytes
        return None

    def stop(self) -> None:
        if self.watchdog is not None:
            self.watchdog.stop()
