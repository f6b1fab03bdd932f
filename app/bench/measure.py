"""What benchmarks, tools and tests measure the same way: a response's Server-Timing, and peak memory.

The server writes Server-Timing in one place (app/responses.py); this is the one reader on the
client side. static/burst.py keeps its own standard-library copy for students, held to this one
by tests/test_measure.py.
"""

import contextlib
import threading
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


class PeakRss:
    """`with PeakRss(tree(pid)) as rss: …`, then `rss.peak`: the highest summed RSS seen, sampled on a thread."""

    def __init__(self, pids: Callable[[], list[int]], every_s: float = 0.02) -> None:
        self._pids = pids
        self._every_s = every_s
        self._stop = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:  # at least one sample, however short the run
            total = 0
            for pid in self._pids():
                try:
                    total += psutil.Process(pid).memory_info().rss
                except psutil.Error:
                    continue  # a process came or went mid-walk: the next sample counts it
            self.peak = max(self.peak, total)
            if self._stop.wait(self._every_s):
                return
