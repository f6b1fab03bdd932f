"""The lesson's record on disk, so it outlives the box's deaths: one SQLite file, written by one thread.

The event loop never waits on it: every half second the recorder hands over what changed (rows, not objects),
and a single thread writes it in one transaction and drops what fell out of the bound (WAL: what was committed
survives the process). What changes between two writes is also appended, as it changes, to a journal beside the
file: one `os.write` of one line, which the kernel keeps when the process is killed. So a death loses nothing a
student saw: an answer's line is written before its head goes out, an arrival's as it arrives. Each write takes
the journal of the changes it carries and removes it once committed; at start-up the next incarnation replays
what journals are left over the file, then reads back what the bound keeps.
"""

import asyncio
import json
import logging
import os
import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.lesson.entry import COLUMNS

log = logging.getLogger(__name__)

__all__ = ["Batch", "Kept", "LessonFile"]

SCHEMA_VERSION = 1
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS entries ({", ".join(f"{c} {'INTEGER PRIMARY KEY' if c == 'id' else ''}" for c in COLUMNS)});
CREATE TABLE IF NOT EXISTS students (key TEXT PRIMARY KEY, number INTEGER NOT NULL, nickname TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS marks (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, at REAL NOT NULL, detail TEXT NOT NULL);
"""
PUT_ENTRY = f"INSERT OR REPLACE INTO entries VALUES ({', '.join('?' for _ in COLUMNS)})"
STUDENTS_EVERY_S = 60.0  # how often students no kept request names are dropped from the file
WIDTHS = {"e": len(COLUMNS), "s": 3, "m": 4}  # a journal line's row, by kind: an entry, a student, a mark
NO_JOURNAL = "Cannot journal the lesson's record beside %s (%s): a death may lose what changed since the last write."


@dataclass(slots=True)
class Batch:
    """What changed in the record since the last write, as plain rows."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)
    students: list[tuple[str, int, str]] = field(default_factory=list)
    marks: list[tuple[int, str, float, str]] = field(default_factory=list)
    journals: list[Path] = field(default_factory=list)  # what noted these changes: removed once they are committed

    def __bool__(self) -> bool:
        return bool(self.entries or self.students or self.marks or self.journals)

    def merge(self, later: "Batch") -> None:
        self.entries += later.entries
        self.students += later.students
        self.marks += later.marks
        self.journals += later.journals


@dataclass(slots=True)
class Kept:
    """What a start-up reads back: entries oldest first, students, marks."""

    entries: list[tuple[Any, ...]]
    students: list[tuple[str, int, str]]
    marks: list[tuple[int, str, float, str]]


class LessonFile:
    def __init__(self, path: Path, max_requests: int, max_age_s: float) -> None:
        self.path = path
        self.max_requests = max_requests
        self.max_age_s = max_age_s
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lesson-file")
        self._conn: sqlite3.Connection | None = None
        self._writing: Future[None] | None = None
        self._waiting = Batch()  # handed over while a write was still running: it goes with the next one
        self._students_pruned = 0.0
        self._journal: int | None = None  # the open journal's descriptor, None until load() (or when it failed)
        self._generation = 0
        self._noted = False  # the open journal has a line: the next save takes it
        self.failures = 0
        self.cpu_s = 0.0  # thread time spent writing (the benchmark reads it)

    async def load(self) -> Kept:
        """Opens the file (made if missing), replays the journals a killed process left, reads back what the bound
        keeps, and opens the next journal; on the file's thread."""
        return await asyncio.wrap_future(self._thread.submit(self._load))

    def note(self, kind: str, row: tuple[Any, ...]) -> None:
        """One change, as it happens (on the loop): `e` an entry's row, `s` a student's, `m` a mark's. One line, one
        write; a failing disk costs the journal only (the next tick's write still tries the file)."""
        if self._journal is None:
            return
        line = json.dumps([kind, row], ensure_ascii=False, separators=(",", ":")) + "\n"
        try:
            os.write(self._journal, line.encode())
            self._noted = True
        except OSError as exc:
            self.failures += 1
            log.warning(NO_JOURNAL, self.path, exc)
            self._close_journal()

    def save(self, batch: Batch) -> None:
        """Hands `batch`, and the journal that noted its changes, to the file's thread; never blocks. One write at a
        time: what comes meanwhile waits. Notes from now on go to a new journal."""
        batch.journals += self._rotate()
        self._waiting.merge(batch)
        if (self._writing is None or self._writing.done()) and self._waiting:
            batch, self._waiting = self._waiting, Batch()
            self._writing = self._thread.submit(self._write, batch, time.time())

    def close(self) -> None:
        """Writes what is still waiting, then closes the file (and the journals, all committed by then)."""
        self._waiting.journals += self._rotate(reopen=False)
        if self._waiting:
            self._thread.submit(self._write, self._waiting, time.time())
        self._thread.submit(self._close)
        self._thread.shutdown(wait=True)

    def journal_path(self, generation: int) -> Path:
        return self.path.with_name(f"{self.path.name}.journal-{generation}")

    def _journals(self) -> list[tuple[int, Path]]:
        """The journals beside the file, oldest first."""
        found = []
        for path in self.path.parent.glob(f"{self.path.name}.journal-*"):
            number = path.name.rpartition("-")[2]
            if number.isdigit():
                found.append((int(number), path))
        return sorted(found)

    def _open_journal(self) -> None:
        path = self.journal_path(self._generation)
        self._journal = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)

    def _close_journal(self) -> None:
        if self._journal is not None:
            os.close(self._journal)
            self._journal = None

    def _rotate(self, reopen: bool = True) -> list[Path]:
        """The journal written so far, closed (for the write that commits its changes to remove), and a new one;
        nothing while it is empty (a quiet tick writes nothing)."""
        if self._journal is None or (reopen and not self._noted):
            return []
        done = self.journal_path(self._generation)
        self._close_journal()
        self._generation += 1
        self._noted = False
        if not reopen:
            return [done]
        try:
            self._open_journal()
        except OSError as exc:
            self.failures += 1
            log.warning(NO_JOURNAL, self.path, exc)
        return [done]

    @property
    def _db(self) -> sqlite3.Connection:
        assert self._conn is not None, "LessonFile.load() was not called"
        return self._conn

    def _load(self) -> Kept:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        db = self._conn
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # a process's death loses nothing committed; only a power cut could
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            db.executescript("DROP TABLE IF EXISTS entries; DROP TABLE IF EXISTS students; DROP TABLE IF EXISTS marks;")
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        db.executescript(SCHEMA)
        journals = self._journals()
        replayed = replay([path for _, path in journals])
        db.execute("BEGIN")
        self._put(db, replayed)
        self._prune(db, time.time())
        db.execute("COMMIT")
        for _, path in journals:  # committed: their changes are in the file now
            path.unlink(missing_ok=True)
        self._generation = journals[-1][0] + 1 if journals else 0
        try:
            self._open_journal()
        except OSError as exc:
            log.warning(NO_JOURNAL, self.path, exc)
        entries = db.execute(f"SELECT {', '.join(COLUMNS)} FROM entries ORDER BY id").fetchall()
        students = db.execute("SELECT key, number, nickname FROM students").fetchall()
        marks = db.execute("SELECT id, kind, at, detail FROM marks ORDER BY id").fetchall()
        return Kept(entries, students, marks)

    def _write(self, batch: Batch, now: float) -> None:
        started = time.thread_time()
        try:
            self._commit(batch, now)
        finally:
            self.cpu_s += time.thread_time() - started

    def _commit(self, batch: Batch, now: float) -> None:
        db = self._db
        try:
            db.execute("BEGIN")
            self._put(db, batch)
            self._prune(db, now)
            db.execute("COMMIT")
        except sqlite3.Error as exc:  # a full disk: the view goes on from memory; a restart shows less
            self.failures += 1
            log.warning("Cannot keep the lesson's record in %s (%s): it lives in memory only.", self.path, exc)
            if db.in_transaction:
                db.execute("ROLLBACK")
            return  # its journals stay: the next start replays them
        for path in batch.journals:
            path.unlink(missing_ok=True)

    @staticmethod
    def _put(db: sqlite3.Connection, batch: Batch) -> None:
        db.executemany(PUT_ENTRY, batch.entries)
        db.executemany("INSERT OR REPLACE INTO students VALUES (?, ?, ?)", batch.students)
        db.executemany("INSERT OR REPLACE INTO marks VALUES (?, ?, ?, ?)", batch.marks)

    def _prune(self, db: sqlite3.Connection, now: float) -> None:
        oldest = now - self.max_age_s
        db.execute(
            "DELETE FROM entries WHERE arrived < ? OR id <= (SELECT MAX(id) FROM entries) - ?",
            (oldest, self.max_requests),
        )
        db.execute("DELETE FROM marks WHERE at < ?", (oldest,))
        if now - self._students_pruned >= STUDENTS_EVERY_S:
            self._students_pruned = now
            db.execute("DELETE FROM students WHERE nickname = '' AND key NOT IN (SELECT DISTINCT student FROM entries)")

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def replay(journals: list[Path]) -> Batch:
    """The changes the journals noted, oldest first: each row its newest state when written in order. A line cut
    short by the kill (or unreadable) is skipped."""
    batch = Batch()
    puts = {"e": batch.entries, "s": batch.students, "m": batch.marks}
    for path in journals:
        try:
            lines = path.read_bytes().splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                kind, row = json.loads(line)
                if len(row) == WIDTHS[kind]:
                    puts[kind].append(tuple(row))
            except (ValueError, KeyError, TypeError):
                continue
    return batch
