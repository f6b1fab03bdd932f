"""③'s batch and its carrier between its loop and the lane: each member's record (`Waiter`, its `Reply`), and the
`Handover` the loop hands members over in, which the lane takes at ③'s turn without waiting for the loop; what
the lane makes of them comes back to the loop in one hop per group."""

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from app.engine.lane import InferenceLane, LaneResult
from app.engine.model import Ranking
from app.errors import InferenceFailed
from app.paths.pipeline import Outcome


class Reply(asyncio.Future[Outcome]):
    """A waiter's future, which tells the batch it was handed over in at once when it is cancelled (its client
    left), not a loop step later as a done-callback would: the batch leaves it out even if the lane takes it next."""

    def __init__(self) -> None:
        super().__init__(loop=asyncio.get_running_loop())
        self.batch: Handover | None = None  # set by `Handover.offer`

    def cancel(self, msg: object = None) -> bool:
        cancelled = super().cancel(msg)
        if cancelled and self.batch is not None:
            self.batch.left(self)
        return cancelled


@dataclass(slots=True)
class Waiter:
    """One request held in a batch: its text, the future its handler awaits, when it arrived."""

    text: str
    future: Reply = field(default_factory=Reply)
    arrived: float = field(default_factory=time.monotonic)


def fail(waiter: Waiter, exc: BaseException, size: int) -> None:
    if not waiter.future.done():
        waiter.future.set_exception(InferenceFailed(f"Inference failed for this review (batch of {size}): {exc}"))


def resolve(batch: list[Waiter], result: LaneResult, number: int | None = None) -> None:
    """Each waiter still waiting gets its ranking, its own wait and the batch's inference time: the last member,
    and any whose answer the loop had not read yet (the others were answered as they finished: handover.py)."""
    for w, ranking in zip(batch, result.rankings, strict=True):
        if w.future.done():
            continue
        if ranking is None:  # left out because it looked gone: never leave a waiter hanging
            fail(w, RuntimeError("left out of its batch"), len(batch))
        else:
            w.future.set_result(Outcome(ranking, result.started_at - w.arrived, result.infer_s, len(batch), number))


async def retry_alone(lane: InferenceLane, batch: list[Waiter], exc: Exception) -> None:
    """A batch failed: score each member alone, so only the text that fails gets an error."""
    if len(batch) == 1:
        fail(batch[0], exc, 1)
        return
    for w in batch:
        if w.future.done():
            continue
        try:
            result = await lane.run([w.text])
        except Exception as alone:
            fail(w, alone, 1)
        else:
            resolve([w], result)


class Handover:
    """One batch of ③'s, from the loop to the lane and back; the loop makes one for each turn it takes.

    On the loop: `offer` hands a waiter over (up to `max_size`, until the lane has taken the batch);
    a member whose client leaves (its `Reply` is cancelled) is dropped, or once taken marked gone, so
    the lane leaves it out of its next model call;
    `seen` turns true (and `taken` is set) once the loop has heard that the lane took the batch, and
    `finished` resolves with the lane's result: one signal for each. On the lane thread, as the turn's
    owner the lane calls: `take` returns whoever was handed over by then, at once; `wanted` and
    `scored` serve the lane during its call; `done` ends it.

    The lane never waits for the loop. Its news (taken, a member scored, done) goes into an outbox,
    and the loop is woken once for all that piled up since it last read it: a stalled loop delays
    answers, never the lane. One lock guards what both sides touch; nothing holds it for longer than
    a few list operations, and never across an await.

    The batcher feeds an open batch from its own `run()` (app/paths/batched.py): as a request arrives, and as a
    member leaves before the lane takes it (its place goes to the next in the queue).

    Who is answered when is decided here: each member as soon as it is scored, but the last awaited
    one, which goes out with the batch's result once the lane is idle again (so its client, sending
    again at once, finds the lane free, as after any whole job).
    """

    def __init__(self, max_size: int, number: int) -> None:
        self._loop = asyncio.get_running_loop()
        self.max_size = max_size
        self.number = number  # X-Batch-Id, if the lane takes anyone
        self._lock = threading.Lock()
        self._members: list[Waiter] = []  # handed over; fixed once taken (the batch)
        self._taken = self._withdrawn = False
        self._gone: set[int] = set()  # members of the batch whose client left
        self._unscored: set[int] = set()  # members of the batch neither scored nor gone
        self._outbox: list[Callable[[], None]] = []
        self._woken = False  # a read of the outbox is already on its way to the loop
        self.seen = self.waited = False  # waited: the lane ran other work between our turn and taking it
        self.taken = asyncio.Event()  # set with `seen`: the loop's one news from the lane before the result
        self.left_out = 0  # members whose client left before the batch went
        self.finished: asyncio.Future[LaneResult] = self._loop.create_future()

    # On the loop.

    def offer(self, waiter: Waiter) -> bool:
        """Hand `waiter` over; False once the batch is full or taken (it waits for the next)."""
        with self._lock:
            if self._taken or self._withdrawn or len(self._members) >= self.max_size:
                return False
            self._members.append(waiter)
        waiter.future.batch = self
        return True

    @property
    def batch(self) -> list[Waiter]:
        """Who the lane took (read once `seen`)."""
        return self._members

    def waiting(self) -> list[Waiter]:
        """Members handed over whom the lane has not taken yet."""
        with self._lock:
            return [] if self._taken or self._withdrawn else list(self._members)

    def in_flight(self) -> int:
        """Members the lane has taken whose answer has not gone out."""
        with self._lock:
            taken = self._taken and not self._withdrawn
        return sum(not w.future.done() for w in self._members) if taken else 0

    def withdraw(self) -> list[Waiter]:
        """The lab is stopping: the lane skips the batch if it has not taken it; every member, to be failed."""
        with self._lock:
            self._withdrawn = True
            members = list(self._members)
        self.finished.cancel()
        return members

    def left(self, reply: Reply) -> None:
        """A member's client left (its reply was cancelled just now)."""
        with self._lock:
            i = next((i for i, member in enumerate(self._members) if member.future is reply), None)
            if i is None:  # not ours (any more): nothing to leave out
                return
            if not self._taken:
                del self._members[i]
                self.left_out += 1
            else:
                self._gone.add(i)
                self._unscored.discard(i)

    def _drain(self) -> None:
        with self._lock:
            news, self._outbox, self._woken = self._outbox, [], False
        for item in news:
            item()

    def _seen(self, waited: bool) -> None:
        self.seen, self.waited = True, waited
        self.taken.set()

    def _answer(self, i: int, ranking: Ranking, started: float, finished: float) -> None:
        waiter = self._members[i]
        if not waiter.future.done():
            size = len(self._members)
            waiter.future.set_result(Outcome(ranking, started - waiter.arrived, finished - started, size, self.number))

    def _finish(self, result: LaneResult | Exception) -> None:
        if self.finished.done():  # withdrawn: the lab is stopping
            return
        if isinstance(result, Exception):
            self.finished.set_exception(result)
        else:
            self.finished.set_result(result)

    # On the lane thread: the lane calls these as our turn's owner (app/engine/turn.py's TurnOwner), in this order.

    def take(self, waited: bool) -> list[str] | None:
        """The lane reached our turn: whoever is handed over goes now (None if nobody: the lane moves on)."""
        with self._lock:
            if self._withdrawn:
                return None
            self._taken = True
            self._unscored = set(range(len(self._members)))
        self._post(partial(self._seen, waited))
        return [w.text for w in self._members] or None

    def wanted(self, i: int) -> bool:
        """Member i's client is still there (asked before each model call: a leaver's pairs are left out)."""
        with self._lock:
            return i not in self._gone

    def scored(self, i: int, ranking: Ranking, started: float, finished: float) -> None:
        """Member i is answered now, unless it left or is the last awaited (that one goes out with `done`)."""
        with self._lock:
            if i in self._gone:
                return
            self._unscored.discard(i)
            if not self._unscored:  # the last awaited member: it goes out with the result, once the lane is idle
                return
        self._post(partial(self._answer, i, ranking, started, finished))

    def done(self, result: LaneResult | Exception) -> None:
        """The lane is idle again: the batch's result (or what failed it) goes to the loop."""
        self._post(partial(self._finish, result))

    def _post(self, news: Callable[[], None]) -> None:
        """Leave `news` for the loop; wake it only if no wake-up is on its way already."""
        with self._lock:
            self._outbox.append(news)
            if self._woken:
                return
            self._woken = True
        with contextlib.suppress(RuntimeError):  # the loop has closed: the lab stopped, nobody is left to answer
            self._loop.call_soon_threadsafe(self._drain)
