"""Every half second, what changed in the lesson's record goes to its file and, as one JSON text, to every class view.

One task does it, whoever watches: the text is built once per tick and each view's socket sends it (app/observe/
fanout.py's reason, for /api/stats/live). A view starts from the whole record; a view too slow to keep up with the
last few texts gets the whole record again instead of a gap. With nobody watching, no text is built.
"""

import asyncio
import contextlib
import json
import logging
import sqlite3
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from app.lesson.keep import Kept, LessonFile
from app.lesson.record import Changes, LessonRecord, entry_body
from app.settings import Settings

log = logging.getLogger(__name__)

__all__ = ["LessonFeed", "open_feed"]

TICK_S = 0.5
KEPT_TEXTS = 16  # eight seconds of ticks: a view further behind starts over from the whole record


@dataclass(frozen=True, slots=True)
class Text:
    after: int  # the version the view must have seen for this text to follow on
    version: int
    body: str


def dumps(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class LessonFeed:
    def __init__(self, record: LessonRecord, file: LessonFile | None, every_s: float = TICK_S) -> None:
        self.record = record
        self.file = file
        self.every_s = every_s
        self.views = 0
        self._texts: deque[Text] = deque(maxlen=KEPT_TEXTS)
        self._published = record.version  # every change up to here has gone out (or nobody was watching)
        self._whole: tuple[int, int, str] | None = None  # the last whole record sent: its version, tick, text
        self._ticked = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="lesson-feed")

    async def stop(self) -> None:
        """The last changes to the file; every view is told the box is going (its socket closes)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.tick()
        self._closed = True
        self._wake()
        if self.file is not None:
            await asyncio.to_thread(self.file.close)

    def tick(self) -> None:
        started = time.thread_time()
        now = time.time()
        changes = self.record.take(now)
        if self.file is not None:
            self.file.save(changes.batch())
        if self.views and self.record.version != self._published:
            body = dumps(self._delta(changes, now))
            self._texts.append(Text(self._published, self.record.version, body))
            self._wake()
        self._published = self.record.version
        self.record.cpu_s += time.thread_time() - started

    async def follow(self, send: Callable[[str], Awaitable[None]]) -> None:
        """Sends one view the whole record, then each tick's changes, until the feed stops (then returns)."""
        self.views += 1
        try:
            seen = await self._send_whole(send)
            while not self._closed:
                ticked = self._ticked
                following = [t for t in self._texts if t.version > seen]
                if not following:
                    await ticked.wait()
                    continue
                if following[0].after != seen:  # fell behind the kept texts: start over
                    seen = await self._send_whole(send)
                    continue
                for text in following:
                    await self._timed(send, text.body)
                    seen = text.version
        finally:
            self.views -= 1

    def whole(self, now: float) -> dict[str, Any]:
        record = self.record
        return {
            "kind": "whole",
            "version": self._published,
            "now": round(now, 3),
            "incarnation": record.incarnation,
            "kept": {"max_requests": record.max_requests, "max_age_s": record.max_age_s},
            "students": {s.key: s.as_dict() for s in record.roster.all()},
            "marks": [m.body() for m in record.marks],
            "entries": [entry_body(e) for e in record.entries],
        }

    def _delta(self, changes: Changes, now: float) -> dict[str, Any]:
        return {
            "kind": "delta",
            "version": self.record.version,
            "now": round(now, 3),
            "incarnation": self.record.incarnation,
            "students": {s.key: s.as_dict() for s in changes.students},
            "marks": [m.body() for m in changes.marks],
            "entries": [entry_body(e) for e in changes.entries],
        }

    async def _send_whole(self, send: Callable[[str], Awaitable[None]]) -> int:
        """The whole record, built once per tick: views that (re)open together (after a death) share it."""
        started, now = time.thread_time(), time.time()
        if self._whole is None or self._whole[:2] != (self._published, int(now / self.every_s)):
            self._whole = (self._published, int(now / self.every_s), dumps(self.whole(now)))
        seen, _, text = self._whole
        self.record.cpu_s += time.thread_time() - started
        await self._timed(send, text)
        return seen

    async def _timed(self, send: Callable[[str], Awaitable[None]], text: str) -> None:
        """A send's own CPU (framing, the socket write) counts as the view's; the wait for the socket does not."""
        started = time.thread_time()
        sending = send(text)
        try:
            await sending
        finally:
            self.record.cpu_s += time.thread_time() - started

    def _wake(self) -> None:
        ticked, self._ticked = self._ticked, asyncio.Event()
        ticked.set()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            try:
                self.tick()
            except Exception:  # one bad tick must not end the record: the next one takes what is left
                log.exception("the lesson feed's tick failed")


async def open_feed(settings: Settings) -> LessonFeed | None:
    """The lesson's record read back from its file (if any), its feed started; None when the record is off."""
    if not settings.lesson_record:
        return None
    state = settings.box_state
    record = LessonRecord(
        max_requests=settings.lesson_max_requests,
        max_age_s=settings.lesson_max_age_s,
        incarnation=state.incarnation if state is not None else 1,
    )
    file = None
    kept = Kept([], [], [])
    if settings.lesson_file is not None:
        file = LessonFile(settings.lesson_file, settings.lesson_max_requests, settings.lesson_max_age_s)
        try:
            kept = await file.load()
        except (OSError, sqlite3.Error) as exc:
            log.warning("Cannot keep the lesson's record in %s (%s): it lives in memory only.", file.path, exc)
            await asyncio.to_thread(file.close)
            file = None
    if file is not None:
        record.journal = file.note  # from the start: the cuts and the start mark a restore makes are changes too
    record.restore(kept, state, time.time())
    feed = LessonFeed(record, file)
    feed.start()
    return feed
