"""The lesson's record as the instructor downloads it: one record per request, as JSON or CSV, optionally filtered."""

import csv
import io
from dataclasses import dataclass
from typing import Any

from app.lesson.entry import Entry, outcome
from app.lesson.record import LessonRecord, Mark, entry_body
from app.lesson.roster import Student

__all__ = ["CSV_COLUMNS", "Copy", "Wanted", "csv_text", "lesson_body"]

CSV_COLUMNS = (
    "id", "student", "name", "path", "status", "outcome", "error", "reason", "arrived", "answered", "wait_ms",
    "infer_ms", "hold", "ticket", "ticket_status", "ticket_end", "incarnation",
)  # fmt: skip
# A spreadsheet runs a cell that starts so as a formula; a nickname is whatever a student typed.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True, slots=True)
class Wanted:
    """The optional filters of GET /api/class/requests (None: any)."""

    student: str | None = None
    path: str | None = None
    outcome: str | None = None
    since: float | None = None  # arrived at or after (epoch seconds, as a record gives them: to the ms)
    until: float | None = None  # arrived before

    def admits(self, e: Entry) -> bool:
        arrived = round(e.arrived, 3)
        return (
            (self.student is None or e.student == self.student)
            and (self.path is None or e.path == self.path)
            and (self.outcome is None or outcome(e) == self.outcome)
            and (self.since is None or arrived >= self.since)
            and (self.until is None or arrived < self.until)
        )


@dataclass(frozen=True, slots=True)
class Copy:
    """The record's lists, copied on the event loop (which alone changes them), to be written out on a thread."""

    incarnation: int
    max_requests: int
    max_age_s: float
    entries: list[Entry]
    students: list[Student]
    marks: list[Mark]

    @classmethod
    def of(cls, record: LessonRecord) -> "Copy":
        return cls(
            record.incarnation,
            record.max_requests,
            record.max_age_s,
            list(record.entries),
            record.roster.all(),
            list(record.marks),
        )


def requests(copy: Copy, wanted: Wanted) -> list[dict[str, Any]]:
    names = {s.key: s.name for s in copy.students}
    return [{**entry_body(e), "name": names.get(e.student, e.student)} for e in copy.entries if wanted.admits(e)]


def lesson_body(copy: Copy, wanted: Wanted, cpu_s: float) -> dict[str, Any]:
    """The JSON answer: the requests (each with the student's display name), the marks, the students, the bound."""
    return {
        "incarnation": copy.incarnation,
        "kept": {"max_requests": copy.max_requests, "max_age_s": copy.max_age_s, "count": len(copy.entries)},
        "cpu_s": round(cpu_s, 6),
        "students": [{"student": s.key, **s.as_dict()} for s in copy.students],
        "marks": [m.body() for m in copy.marks],
        "requests": requests(copy, wanted),
    }


def cell(column: str, value: Any) -> Any:
    """A nickname that a spreadsheet would run as a formula is written as text; None is an empty cell."""
    if column == "name" and isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return "" if value is None else value


def csv_text(copy: Copy, wanted: Wanted) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for row in requests(copy, wanted):
        writer.writerow([cell(column, row[column]) for column in CSV_COLUMNS])
    return out.getvalue()
