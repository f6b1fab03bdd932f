"""The lesson's record in memory: every path request's entry, the students, and the marks across every lane.

The hooks are called on the event loop at a request's arrival, its answer's head and its end (LabMiddleware), at a
ticket's end (④'s worker) and at a knob's turn (the board); each is a few attribute writes, an append and a line to
the file's journal (`journal`: app/lesson/keep.py), nothing on the lane's thread. What changed is taken every half
second by the feed (app/lesson/feed.py), which writes it to the file and sends it to the open class views.
Bounded: the last `max_requests` requests, none older than `max_age_s`.
"""

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Message, Scope

from app.errors import CLIENT_GONE
from app.knobs.board import Change
from app.lesson.entry import Entry, outcome, student_of
from app.lesson.keep import Batch, Kept
from app.lesson.roster import Roster, Student
from app.settings import BoxState

__all__ = ["LessonRecord", "Mark", "entry_body"]

MAX_MARKS = 1000  # deaths, starts and knob turns in two hours: a few dozen in a real lesson


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment across every lane: `start` (an incarnation began), `death` (the box died), `knob` (a turn)."""

    id: int
    kind: str
    at: float
    detail: dict[str, Any]

    def row(self) -> tuple[int, str, float, str]:
        return (self.id, self.kind, self.at, json.dumps(self.detail, ensure_ascii=False))

    def body(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "at": round(self.at, 3), **self.detail}


def ms(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def at(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def entry_body(e: Entry) -> dict[str, Any]:
    """One request as the API and the live views give it (times: epoch seconds; wait and infer: ms)."""
    return {
        "id": e.id,
        "student": e.student,
        "path": e.path,
        "status": e.status,
        "outcome": outcome(e),
        "error": e.error,
        "reason": e.reason,
        "arrived": at(e.arrived),
        "answered": at(e.answered),
        "wait_ms": ms(e.wait_ms),
        "infer_ms": ms(e.infer_ms),
        "hold": e.hold,
        "ticket": e.ticket,
        "ticket_status": e.ticket_status,
        "ticket_end": at(e.ticket_end),
        "incarnation": e.incarnation,
    }


@dataclass
class Changes:
    """What the feed takes each tick: the changed entries (each once), students and new marks."""

    entries: list[Entry] = field(default_factory=list)
    students: list[Student] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)

    def batch(self) -> Batch:
        return Batch(
            [e.row() for e in self.entries],
            [(s.key, s.number, s.nickname) for s in self.students],
            [m.row() for m in self.marks],
        )


class LessonRecord:
    def __init__(self, *, max_requests: int, max_age_s: float, incarnation: int = 1) -> None:
        self.max_requests = max_requests
        self.max_age_s = max_age_s
        self.incarnation = incarnation
        self.entries: deque[Entry] = deque()
        self.roster = Roster(max_students=max_requests)
        self.marks: deque[Mark] = deque()
        self.version = 0  # bumped by every change; an entry carries the version of its last change
        self.cpu_s = 0.0  # thread time the loop spent in these hooks and the feed (the benchmark reads it)
        # Each change as it happens ("e" an entry's row, "s" a student's, "m" a mark's): what a death cannot lose.
        self.journal: Callable[[str, tuple[Any, ...]], None] | None = None
        self._tickets: dict[str, Entry] = {}
        self._next_id = 1
        self._next_mark = 1
        self._changed: list[Entry] = []
        self._new_marks: list[Mark] = []

    # ---- start-up

    def restore(self, kept: Kept, state: BoxState | None, now: float) -> None:
        """What the file kept; open requests of earlier incarnations were cut by a death (or a stop)."""
        for key, number, nickname in kept.students:
            self.roster.restore(key, number, nickname)
        for row in kept.entries:
            self._keep(Entry.from_row(row))
        for mark_id, kind, when, detail in kept.marks:
            self.marks.append(Mark(mark_id, kind, when, json.loads(detail)))
            self._next_mark = max(self._next_mark, mark_id + 1)
        started = [int(m.detail.get("incarnation", 0)) for m in self.marks if m.kind == "start"]
        earlier = max([e.incarnation for e in self.entries] + started, default=0)
        self.incarnation = max(self.incarnation, earlier + 1)
        death = None if state is None else state.last_death_at
        if death is not None and not any(m.kind == "death" and m.at == death for m in self.marks):
            assert state is not None
            self.mark("death", death, {"cause": state.last_death_cause, "detail": state.last_death_detail})
        for e in self.entries:
            if e.status is None and e.incarnation < self.incarnation and not e.cut:
                e.cut, e.answered = True, death if death is not None and death >= e.arrived else now
                self._changed_now(e)
        self.mark("start", now, {"incarnation": self.incarnation})

    def _keep(self, e: Entry) -> None:
        self.entries.append(e)
        self.roster.seen(e.student).requests += 1
        if e.ticket is not None:
            self._tickets[e.ticket] = e
        self._next_id = max(self._next_id, e.id + 1)

    # ---- hooks (on the event loop)

    def arrive(self, scope: Scope, path: str) -> Entry:
        started = time.thread_time()
        e = Entry(self._next_id, student_of(scope), path, time.time(), self.incarnation)
        self._next_id += 1
        students = len(self.roster)
        self._keep(e)
        if len(self.roster) > students:  # a new student: their number is what the view calls them
            self._note_student(self.roster.seen(e.student))
        if len(self.entries) > self.max_requests:
            self._drop_oldest()
        self._changed_now(e)
        self.cpu_s += time.thread_time() - started
        return e

    def answer_started(self, e: Entry, message: Message, scope: Scope) -> None:
        """The answer's head, before it goes out: noted in the journal first, so what the student sees survives a
        death that comes before the next write (answered: now, until its end is known)."""
        started = time.thread_time()
        e.answer_started(message, scope)
        e.answered = time.time()
        if self.journal is not None:
            self.journal("e", e.row())
        self.cpu_s += time.thread_time() - started

    def ended(self, e: Entry) -> None:
        """The answer went out (its head was read into the entry as it left: Entry.answer_started)."""
        started = time.thread_time()
        e.answered = time.time()
        if e.status is None:  # the client left first: nobody read an answer (nginx's 499, as ClientGone says)
            e.status, e.error = CLIENT_GONE.status, CLIENT_GONE.code
        if e.ticket is not None:
            self._tickets[e.ticket] = e
        self._changed_now(e)
        self.cpu_s += time.thread_time() - started

    def ticket_done(self, ticket: str, finished_at: float, waited_ms: float | None, infer_ms: float | None) -> None:
        """④'s worker wrote a ticket done: its submission's entry gets the ticket's end and times."""
        e = self._tickets.get(ticket)
        if e is not None:
            e.ticket_status, e.ticket_end, e.wait_ms, e.infer_ms = "done", finished_at, waited_ms, infer_ms
            self._changed_now(e)

    def knob_turned(self, change: Change) -> None:
        self.mark("knob", change.at, {"setting": change.setting, "old": change.old, "new": change.new})

    def rename(self, key: str, nickname: str) -> Student:
        renamed = self.roster.rename(key, nickname)
        self._note_student(renamed)
        return renamed

    def mark(self, kind: str, when: float, detail: dict[str, Any]) -> Mark:
        made = Mark(self._next_mark, kind, when, detail)
        self._next_mark += 1
        self.marks.append(made)
        if len(self.marks) > MAX_MARKS:
            self.marks.popleft()
        self.version += 1
        self._new_marks.append(made)
        if self.journal is not None:
            self.journal("m", made.row())
        return made

    def _note_student(self, s: Student) -> None:
        if self.journal is not None:
            self.journal("s", (s.key, s.number, s.nickname))

    # ---- the feed's side

    def take(self, now: float) -> Changes:
        """What changed since the last take (each entry once), after dropping what fell out of the bound."""
        self._trim(now)
        changed = Changes(list(dict.fromkeys(self._changed)), list(dict.fromkeys(self.roster.changed)), self._new_marks)
        self._changed, self.roster.changed, self._new_marks = [], [], []
        if (changed.students or changed.marks) and not changed.entries:
            # A nickname or a mark alone is news too: without a new version the feed sent nothing for it, and a
            # view open before a student named themselves showed their key for the rest of the lesson.
            self.version += 1
        return changed

    def since(self, version: int) -> list[Entry]:
        return [e for e in self.entries if e.version > version]

    def _changed_now(self, e: Entry) -> None:
        self.version += 1
        e.version = self.version
        self._changed.append(e)
        if self.journal is not None:
            self.journal("e", e.row())

    def _trim(self, now: float) -> None:
        oldest = now - self.max_age_s
        while self.entries and self.entries[0].arrived < oldest:
            self._drop_oldest()
        while self.marks and self.marks[0].at < oldest:
            self.marks.popleft()

    def _drop_oldest(self) -> None:
        e = self.entries.popleft()
        self.roster.released(e.student)
        if e.ticket is not None and self._tickets.get(e.ticket) is e:
            del self._tickets[e.ticket]
