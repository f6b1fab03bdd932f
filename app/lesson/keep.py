"""The lesson's record on disk, so it outlives the box's deaths: one SQLite file, written by one thread.

The event loop never waits on it: every half second the recorder hands over what changed (rows, not objects),
and a single thread writes it in one transaction and drops what fell out of the bound. A kill loses at most
the last half second (WAL: what was committed survives the process). At start-up the next incarnation reads
back what the bound keeps.
"""

import asyncio
import logging
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


@dataclass(slots=True)
class Batch:
    """What changed in the record since the last write, as plain rows."""

    entries: list[tuple[Any, ...]] = field(default_factory=list)
    students: list[tuple[str, int, str]] = field(default_factory=list)
    marks: list[tuple[int, str, float, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.entries or self.students or self.marks)

    def merge(self, later: "Batch") -> None:
        self.entries += later.entries
        self.students += later.students
        self.marks += later.marks


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
        self.failures = 0
        self.cpu_s = 0.0  # thread time spent writing (the benchmark reads it)

    async def load(self) -> Kept:
        """Opens the file (made if missing) and reads back what the bound keeps; on the file's thread."""
        return await asyncio.wrap_future(self._thread.submit(self._load))

    def save(self, batch: Batch) -> None:
        """Hands `batch` to the file's thread; never blocks. One write at a time: what comes meanwhile waits."""
        self._waiting.merge(batch)
        if (self._writing is None or self._writing.done()) and self._waiting:
            batch, self._waiting = self._waiting, Batch()
            self._writing = self._thread.submit(self._write, batch, time.time())

    def close(self) -> None:
        """Writes what is still waiting, then closes the file."""
        if self._waiting:
            self._thread.submit(self._write, self._waiting, time.time())
        self._thread.submit(self._close)
        self._thread.shutdown(wait=True)

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
        self._prune(db, time.time())
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
            db.executemany(PUT_ENTRY, batch.entries)
            db.executemany("INSERT OR REPLACE INTO students VALUES (?, ?, ?)", batch.students)
            db.executemany("INSERT OR REPLACE INTO marks VALUES (?, ?, ?, ?)", batch.marks)
            self._prune(db, now)
            db.execute("COMMIT")
        except sqlite3.Error as exc:  # a full disk: the view goes on from memory; a restart shows less
            self.failures += 1
            log.warning("Cannot keep the lesson's record in %s (%s): it lives in memory only.", self.path, exc)
            if db.in_transaction:
                db.execute("ROLLBACK")

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
