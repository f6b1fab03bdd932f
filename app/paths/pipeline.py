"""The contract every direct path speaks, and the one pipeline around it: cache → run → cache put → timings.

①②③ each expose `async run(text) -> Outcome`; `Pipeline.through_cache` wraps any of them (and the
ticket worker's inference) so a hit, a put and the timing histograms happen in one place.
"""

from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from app.engine.cache import ResultCache
from app.engine.model import Ranking
from app.engine.tally import INFERENCE_BUCKETS, WAIT_BUCKETS, Tally, TallySnapshot


@dataclass(frozen=True, slots=True)
class Outcome:
    """One review's answer from a path: `wait_s` until its inference started, `infer_s` until its own answer
    (in a ③ batch, each member's pairs finish at their own moment)."""

    ranking: Ranking
    wait_s: float
    infer_s: float
    batch_size: int | None = None
    batch_id: int | None = None  # ③'s count of batches: answers with the same id rode together


@runtime_checkable
class DirectPath(Protocol):
    """What `serve` needs from a path: its name, whether a client leaving can withdraw its work, `run`."""

    @property
    def name(self) -> str: ...

    @property
    def withdrawable(self) -> bool: ...

    async def run(self, text: str) -> Outcome: ...


@dataclass(frozen=True, slots=True)
class PipelineSnapshot:
    """Per path name; a path that has not been timed yet reads as empty (the collector still exports it)."""

    waits: dict[str, TallySnapshot] = field(default_factory=dict)
    inferences: dict[str, TallySnapshot] = field(default_factory=dict)
    gone: dict[str, int] = field(default_factory=dict)

    def wait(self, path: str) -> TallySnapshot:
        return self.waits.get(path) or Tally(WAIT_BUCKETS).snapshot()

    def inference(self, path: str) -> TallySnapshot:
        return self.inferences.get(path) or Tally(INFERENCE_BUCKETS).snapshot()

    def client_gone(self, path: str) -> int:
        return self.gone.get(path, 0)


class Pipeline:
    """Owns the cache step and the per-path wait and inference histograms (made on a path's first use)."""

    def __init__(self, cache: ResultCache) -> None:
        self.cache = cache
        self.running = 0  # reviews inside `through_cache` now, whatever path, answered from the cache or not
        # Called when a review leaves, answered or refused: a crowd may be over (app/memory/give_back.py).
        self.on_leave: Callable[[], None] | None = None
        self._wait: defaultdict[str, Tally] = defaultdict(lambda: Tally(WAIT_BUCKETS))
        self._inference: defaultdict[str, Tally] = defaultdict(lambda: Tally(INFERENCE_BUCKETS))
        self._gone: defaultdict[str, int] = defaultdict(int)

    def cached(self, path: str, text: str) -> Ranking | None:
        return self.cache.get(text, path)

    async def through_cache(self, path: str, text: str, run: Callable[[], Awaitable[Outcome]]) -> tuple[Outcome, bool]:
        """(outcome, cache hit): a hit costs no inference; a miss runs, is cached and timed."""
        self.running += 1
        try:
            ranking = self.cached(path, text)
            if ranking is not None:
                return Outcome(ranking, 0.0, 0.0), True
            outcome = await run()
            self.cache.put(text, outcome.ranking)
            self._inference[path].observe(outcome.infer_s)
            return outcome, False
        finally:
            self.running -= 1
            if self.on_leave is not None:
                self.on_leave()

    def waited(self, path: str, wait_s: float) -> None:
        self._wait[path].observe(wait_s)

    def client_gone(self, path: str) -> None:
        self._gone[path] += 1

    def snapshot(self) -> PipelineSnapshot:
        return PipelineSnapshot(
            waits={p: t.snapshot() for p, t in list(self._wait.items())},
            inferences={p: t.snapshot() for p, t in list(self._inference.items())},
            gone=dict(self._gone),
        )
