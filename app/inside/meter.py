"""What reviews really cost on the box as they run: every model call, the lane's and ①'s alike.

The box's speed loop (app/inside/speed.py) needs the seconds one review takes *alone*. Calls
overlap (① runs twelve at once on one core), so each call also records how many inferences
were running beside it on average (the integral of the running count over its lifetime):
a call that shared the core with N others for its whole life took N+1 times its solo cost.
"""

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from app.engine.model import Ranking, Scorer, Wanted, in_order, score_each
from app.inside.priority import take_back_seat

WINDOW_S = 60.0


@dataclass(frozen=True, slots=True)
class Sample:
    """One single-review call: when it ran, what it would have cost alone, and its CPU time."""

    started: float
    ended: float
    solo_s: float  # wall seconds divided by the average number of inferences running at once
    cpu_s: float  # CPU of the calling thread (model + burning)
    chars: int


class ReviewMeter:
    """Wraps the box's scorer (outermost, so burning is counted); batches of 2+ are not samples.

    A batch costs less per review than one review alone: the target is about one review, so
    only single-review calls (①, ②, ④, a ③ batch of one, the loop's own probe) are measured.
    """

    def __init__(
        self,
        inner: Scorer,
        clock: Callable[[], float] = time.monotonic,
        cpu: Callable[[], float] = time.thread_time,
        window_s: float = WINDOW_S,
    ) -> None:
        self._inner = inner
        self._clock = clock
        self._cpu = cpu
        self._window_s = window_s
        self._lock = threading.Lock()
        self._running = 0
        self._integral = 0.0  # ∫ running dt since start
        self._mark = clock()
        self._samples: deque[Sample] = deque()
        self.last_end = self._mark

    @property
    def running(self) -> int:
        return self._running

    def _advance(self, now: float) -> float:
        """Bring the integral up to `now` (call with the lock held) and return it."""
        self._integral += self._running * max(now - self._mark, 0.0)
        self._mark = now
        return self._integral

    @property
    def inner(self) -> Scorer:
        return self._inner

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        return in_order(self.score_each(texts), len(texts))

    def score_each(self, texts: Sequence[str], wanted: Wanted | None = None) -> Iterator[tuple[int, Ranking]]:
        """The inner scorer's stream, measured from its start to its end (a call cut short is a call too).

        The calling thread takes the back seat first (app/inside/priority.py): the door runs before inferences.
        """
        take_back_seat()
        with self._lock:
            started = self._clock()
            before = self._advance(started)
            self._running += 1
        cpu0 = self._cpu()
        completed = 0
        try:
            for scored in score_each(self._inner, texts, wanted):
                completed += 1
                yield scored
        finally:
            cpu_s = self._cpu() - cpu0
            with self._lock:
                ended = self._clock()
                shared = self._advance(ended) - before
                self._running -= 1
                self.last_end = ended
                wall = ended - started
                if len(texts) == 1 and completed == 1 and wall > 0:
                    company = max(shared / wall, 1.0)
                    self._samples.append(Sample(started, ended, wall / company, cpu_s, len(texts[0])))
                self._trim(ended)

    def _trim(self, now: float) -> None:
        while self._samples and self._samples[0].ended < now - self._window_s:
            self._samples.popleft()

    def samples(self, since: float | None = None) -> list[Sample]:
        """Samples of the last window, or only those that started at or after `since`."""
        with self._lock:
            self._trim(self._clock())
            return [s for s in self._samples if since is None or s.started >= since]


def median_solo_s(samples: Sequence[Sample], relative_cost: Callable[[int], float]) -> float | None:
    """Median seconds of a median-length review alone: each sample scaled by what its length costs."""
    if not samples:
        return None
    return statistics.median(s.solo_s * relative_cost(s.chars) for s in samples)
