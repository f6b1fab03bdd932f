"""Path 1: every request infers at once on its own server thread; nobody waits, nobody is refused."""

import threading
import time

import anyio.to_thread

from app.engine.model import ONE_CALL, Scorer, calls_shaped
from app.errors import InferenceFailed, LabError
from app.memory.guard import MemoryGuard
from app.paths.parts import Parts
from app.paths.pipeline import Outcome
from app.paths.registry import Load, spec

SPEC = spec("naive")


class NaiveRunner:
    """Calls the model directly on a server thread (the pool sync endpoints use, 40 threads).

    No lane, no limit: twelve requests mean twelve inferences fighting for the CPU and
    twelve sets of activations in memory at once. That is the lesson. Each request makes the
    call the server a student writes first makes (`ONE_CALL`: its 24 pairs in one model call,
    padded to the longest), not the lane's call shape measured for speed: that call is what
    costs ① its memory (docs/box.md, "① at the cliff"). An optional MemoryGuard (off by
    default) refuses the inference that would not fit in memory.
    """

    spec = SPEC
    name = SPEC.name
    withdrawable = False  # a thread cannot be stopped mid-inference

    def __init__(self, scorer: Scorer, guard: MemoryGuard | None = None) -> None:
        self._scorer = scorer
        self._guard = guard
        self._lock = threading.Lock()
        self.in_flight = 0
        self.last_infer_s = 1.0
        self._refused = 0

    async def run(self, text: str) -> Outcome:
        """`wait_s` is the time spent waiting for a server thread."""
        called = time.monotonic()
        return await anyio.to_thread.run_sync(self._run, text, called)

    def _run(self, text: str, called: float) -> Outcome:
        promised = 0
        if self._guard is not None:
            try:
                promised = self._guard.reserve(text, retry_after_s=self.last_infer_s)
            except Exception:
                with self._lock:
                    self._refused += 1
                raise
        with self._lock:
            self.in_flight += 1
        started = time.monotonic()
        try:
            with calls_shaped(ONE_CALL):
                (ranking,) = self._scorer.score([text])
        except LabError:
            raise
        except Exception as exc:
            raise InferenceFailed(f"Inference failed: {exc}") from exc
        finally:
            with self._lock:
                self.in_flight -= 1
            if self._guard is not None:
                self._guard.release(promised)
        infer_s = time.monotonic() - started
        self.last_infer_s = infer_s
        return Outcome(ranking, started - called, infer_s)

    @property
    def inferring(self) -> bool:
        """Whether an inference runs now, beside the lane: the box is busy (app/memory/give_back.py)."""
        return self.in_flight > 0

    def load(self) -> Load:
        """Nobody waits on this path: every request is inferring (or waiting for a server thread, unseen)."""
        with self._lock:
            return Load(self.in_flight, 0, {"memory_would_not_fit": self._refused})


def build(parts: Parts) -> NaiveRunner:
    """① from the lab's parts: the scorer itself, on a server thread, and the memory guard measured at start-up."""
    return NaiveRunner(parts.scorer, parts.guard)
