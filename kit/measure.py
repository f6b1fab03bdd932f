"""What benchmarks, tools and tests measure the same way: a response's Server-Timing, and peak memory.

The server writes Server-Timing in one place (app/contract/responses.py); this is the one reader on the
client side. static/burst.py keeps its own standard-library copy for students, held to this one
by tests/test_measure.py.
"""

import contextlib
import threading
import time
from collections.abc import Callable

import psutil


def server_timing(header: str | None) -> dict[str, float]:
    """`wait;dur=12.5, infer;dur=980.1` → {"wait": 12.5, "infer": 980.1}, in milliseconds; {} without a header.

    Entries without a duration, or with one that is not a number, are left out.
    """
    found: dict[str, float] = {}
    for entry in (header or "").split(","):
        name, *params = (part.strip() for part in entry.split(";"))
        for param in params:
            key, _, value = param.partition("=")
            if name and key.strip() == "dur":
                with contextlib.suppress(ValueError):
                    found[name] = float(value)
    return found


def timing_s(header: str | None, name: str) -> float | None:
    """One Server-Timing entry in seconds (None if absent)."""
    ms = server_timing(header).get(name)
    return None if ms is None else ms / 1000


def tree(pid: int) -> Callable[[], list[int]]:
    """A process and all its descendants, read afresh each time (a box replaces its server after a death)."""

    def pids() -> list[int]:
        try:
            root = psutil.Process(pid)
            return [pid, *(child.pid for child in root.children(recursive=True))]
        except psutil.Error:
            return []

    return pids


def children(pid: int) -> Callable[[], list[int]]:
    """A supervisor's descendants, without the supervisor itself."""
    return lambda: tree(pid)()[1:]


def alone(pid: int) -> Callable[[], list[int]]:
    """One process, without its descendants."""
    return lambda: [pid]


class PeakRss:
    """`with PeakRss(tree(pid)) as rss: …`, then `rss.peak`: the highest summed RSS seen, sampled on a thread.

    The one peak-memory sampler of the benchmarks, tools and tests. `also` names other byte counts read
    on the same beat (a memory cgroup's anonymous pages, say): `rss.peaks[name]` keeps the highest of
    each; a reading that fails (OSError: the group is gone) is skipped.
    """

    def __init__(
        self, pids: Callable[[], list[int]], every_s: float = 0.02, also: dict[str, Callable[[], int]] | None = None
    ) -> None:
        self._pids = pids
        self._every_s = every_s
        self._also = also or {}
        self._stop = threading.Event()
        self.peak = 0
        self.peaks = dict.fromkeys(self._also, 0)
        # (monotonic, CPU seconds of those processes so far), each sample: how long a server kept working.
        self.cpu: list[tuple[float, float]] = []
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:  # at least one sample, however short the run
            total, cpu = 0, 0.0
            for pid in self._pids():
                try:
                    process = psutil.Process(pid)
                    total += process.memory_info().rss
                    times = process.cpu_times()
                    cpu += times.user + times.system
                except psutil.Error:
                    continue  # a process came or went mid-walk: the next sample counts it
            self.peak = max(self.peak, total)
            self.cpu.append((time.monotonic(), cpu))
            for name, read in self._also.items():
                with contextlib.suppress(OSError):
                    self.peaks[name] = max(self.peaks[name], read())
            if self._stop.wait(self._every_s):
                return
