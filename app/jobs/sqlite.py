"""Jobs in an embedded SQLite file (WAL): survives a hard kill, needs no server, one box.

Several processes on one box may share the file: every claim and every conditional
write runs in a `BEGIN IMMEDIATE` transaction, which takes SQLite's write lock first.
"""

import asyncio
import json
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from app.errors import StoreUnavailable
from app.jobs.models import Expect, Job, JobStatus, WebhookState
from app.jobs.store import CLAIM_SCAN, Ahead, QueueFull, claimed, empty_counts, is_due, is_overdue

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    status TEXT NOT NULL,
    idempotency_key TEXT UNIQUE,
    lease_until REAL,
    finished_at REAL,
    webhook_state TEXT,
    webhook_next_at REAL,
    doc TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_status ON jobs (status, seq);
CREATE INDEX IF NOT EXISTS jobs_by_webhook ON jobs (webhook_state, webhook_next_at);
CREATE TABLE IF NOT EXISTS workers (owner TEXT PRIMARY KEY, seen_until REAL NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta (name, value) VALUES ('version', 0);
"""


class SqliteJobStore:
    """One connection, used only from one dedicated thread, so the event loop never blocks on disk.

    `doc` holds the whole record; the other columns copy the fields that queries select on.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-jobs")
        self._conn: sqlite3.Connection | None = None
        self._inode: tuple[int, int] | None = None  # (device, inode) of the file we opened

    async def open(self) -> "SqliteJobStore":
        await self._call(self._open)
        return self

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        # FULL: a committed ticket survives even a power cut, not only a killed process.
        conn.execute("PRAGMA synchronous=FULL")
        conn.executescript(SCHEMA)
        self._conn = conn
        stat = os.stat(self.path)
        self._inode = (stat.st_dev, stat.st_ino)

    async def version(self) -> int:
        def version() -> int:
            return int(self._db.execute("SELECT value FROM meta WHERE name = 'version'").fetchone()[0])

        return await self._call(version)

    async def check(self) -> str | None:
        """An open connection keeps writing to a deleted or replaced file, which nobody will
        read again: compare the path's inode with the one opened (one stat, no thread hop)."""
        try:
            stat = os.stat(self.path)
        except FileNotFoundError:
            return f"the job database {self.path} was deleted while serving; tickets would be lost"
        except OSError as exc:
            return f"the job database {self.path} cannot be read: {exc.strerror}"
        if (stat.st_dev, stat.st_ino) != self._inode:
            return f"the job database {self.path} was replaced by another file while serving; restart the box"
        return None

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)

    @property
    def _db(self) -> sqlite3.Connection:
        assert self._conn is not None, "SqliteJobStore.open() was not awaited"
        return self._conn

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in one immediate transaction: the write lock is taken before any read."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            outcome = fn(db)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return outcome

    @staticmethod
    def _row(job: Job) -> dict[str, Any]:
        return {
            "id": job.id,
            "status": job.status.value,
            "idempotency_key": job.idempotency_key,
            "lease_until": job.lease_until,
            "finished_at": job.finished_at,
            "webhook_state": None if job.webhook_state is None else job.webhook_state.value,
            "webhook_next_at": job.webhook_next_at,
            "doc": json.dumps(job.to_dict(), ensure_ascii=False),
        }

    @staticmethod
    def _job(doc: str, seq: int) -> Job:
        job = Job.from_dict(json.loads(doc))
        job.seq = seq
        return job

    def _select(self, db: sqlite3.Connection, where: str, params: tuple[Any, ...] = ()) -> list[Job]:
        rows = db.execute(f"SELECT doc, seq FROM jobs WHERE {where}", params).fetchall()
        return [self._job(doc, seq) for doc, seq in rows]

    def _update(self, db: sqlite3.Connection, job: Job) -> None:
        row = self._row(job)
        db.execute(
            "UPDATE jobs SET status=:status, lease_until=:lease_until, finished_at=:finished_at, "
            "webhook_state=:webhook_state, webhook_next_at=:webhook_next_at, doc=:doc WHERE id=:id",
            row,
        )

    @staticmethod
    def _bump(db: sqlite3.Connection, changes: int = 1) -> None:
        """Count job changes in the same transaction, for watchers on every box (not lease renewals)."""
        if changes:
            db.execute("UPDATE meta SET value = value + ? WHERE name = 'version'", (changes,))

    async def add(self, job: Job, max_queued: int | None = None) -> tuple[Job, bool]:
        problem = await self.check()
        if problem is not None:  # a 202 now would be a promise no restart keeps
            raise StoreUnavailable(problem)

        def add(db: sqlite3.Connection) -> tuple[Job, bool]:
            if job.idempotency_key is not None:
                held = self._select(db, "idempotency_key = ?", (job.idempotency_key,))
                if held:
                    return held[0], False
            if job.status is JobStatus.QUEUED and max_queued is not None:
                queued = int(db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued'").fetchone()[0])
                if queued >= max_queued:
                    raise QueueFull(queued)
            if job.status is JobStatus.QUEUED:  # inside the write lock: no other insert or claim between
                row = db.execute("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')").fetchone()
                job.ahead_at_add = int(row[0])
            row = self._row(job)
            cursor = db.execute(
                "INSERT INTO jobs (id, status, idempotency_key, lease_until, finished_at, webhook_state, "
                "webhook_next_at, doc) VALUES (:id, :status, :idempotency_key, :lease_until, :finished_at, "
                ":webhook_state, :webhook_next_at, :doc)",
                row,
            )
            assert cursor.lastrowid is not None
            job.seq = cursor.lastrowid
            self._update(db, job)  # the doc carries its seq too
            self._bump(db)
            return job, True

        return await self._call(self._write, add)

    async def get(self, job_id: str) -> Job | None:
        jobs = await self._call(self._select, self._db, "id = ?", (job_id,))
        return jobs[0] if jobs else None

    async def get_by_idempotency_key(self, key: str) -> Job | None:
        jobs = await self._call(self._select, self._db, "idempotency_key = ?", (key,))
        return jobs[0] if jobs else None

    async def claim_next(self, owner: str, lease_s: float, now: float) -> Job | None:
        def claim(db: sqlite3.Connection) -> Job | None:
            for job in self._select(db, "status = 'queued' ORDER BY seq LIMIT ?", (CLAIM_SCAN,)):
                if is_due(job, now):
                    self._update(db, claimed(job, owner, lease_s, now))
                    self._bump(db)
                    return job
            return None

        return await self._call(self._write, claim)

    async def replace(self, job: Job, expect: Expect) -> bool:
        def replace(db: sqlite3.Connection) -> bool:
            current = self._select(db, "id = ?", (job.id,))
            if not current or not expect.holds(current[0], job):
                return False
            self._update(db, job)
            self._bump(db)
            return True

        return await self._call(self._write, replace)

    async def heartbeat(self, owner: str, lease_s: float, now: float) -> set[str]:
        def beat(db: sqlite3.Connection) -> set[str]:
            db.execute(
                "INSERT INTO workers (owner, seen_until) VALUES (?, ?) "
                "ON CONFLICT (owner) DO UPDATE SET seen_until = excluded.seen_until",
                (owner, now + lease_s),
            )
            held = set()
            for job in self._select(db, "status = 'running'"):
                if job.owner == owner:
                    job.lease_until = now + lease_s
                    self._update(db, job)
                    held.add(job.id)
            return held

        return await self._call(self._write, beat)

    async def lapsed(self, now: float) -> list[Job]:
        return await self._call(self._select, self._db, "status = 'running' AND lease_until < ?", (now,))

    async def overdue(self, now: float) -> list[Job]:
        queued = await self._call(self._select, self._db, "status = 'queued' ORDER BY seq")
        return [job for job in queued if is_overdue(job, now)]

    async def webhooks_due(self, now: float, limit: int) -> list[Job]:
        return await self._call(
            self._select,
            self._db,
            "webhook_state = ? AND webhook_next_at <= ? ORDER BY webhook_next_at LIMIT ?",
            (WebhookState.PENDING.value, now, limit),
        )

    async def position(self, job_id: str) -> int | None:
        def position() -> int | None:
            row = self._db.execute("SELECT seq, status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None or row[1] != JobStatus.QUEUED.value:
                return None
            ahead = self._db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued' AND seq < ?", (row[0],))
            return int(ahead.fetchone()[0])

        return await self._call(position)

    async def ahead(self, job_id: str) -> Ahead | None:
        def ahead() -> Ahead | None:
            row = self._db.execute("SELECT seq, status FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None or row[1] != JobStatus.QUEUED.value:
                return None
            # A record written before `chars` existed counts its text's length.
            jobs, chars = self._db.execute(
                "SELECT COUNT(*), TOTAL(COALESCE(json_extract(doc, '$.chars'), LENGTH(json_extract(doc, '$.text')))) "
                "FROM jobs WHERE status = 'queued' AND seq < ?",
                (row[0],),
            ).fetchone()
            return Ahead(int(jobs), int(chars))

        return await self._call(ahead)

    async def queued_count(self) -> int:
        return (await self.counts())[JobStatus.QUEUED.value]

    async def counts(self) -> dict[str, int]:
        def counts() -> dict[str, int]:
            counted = empty_counts()
            for status, count in self._db.execute("SELECT status, COUNT(*) FROM jobs GROUP BY status"):
                counted[status] = int(count)
            return counted

        return await self._call(counts)

    async def live_workers(self, now: float) -> int:
        def live() -> int:
            row = self._db.execute("SELECT COUNT(*) FROM workers WHERE seen_until >= ?", (now,)).fetchone()
            return max(1, int(row[0]))

        return await self._call(live)

    async def forget_finished(self, before: float) -> int:
        def forget(db: sqlite3.Connection) -> int:
            db.execute("DELETE FROM workers WHERE seen_until < ?", (before,))
            cursor = db.execute(
                "DELETE FROM jobs WHERE status NOT IN ('queued', 'running') AND finished_at < ? "
                "AND (webhook_state IS NULL OR webhook_state != 'pending')",
                (before,),
            )
            self._bump(db, cursor.rowcount)
            return cursor.rowcount

        return await self._call(self._write, forget)

    async def close(self) -> None:
        if self._conn is not None:
            await self._call(self._conn.close)
            self._conn = None
        self._thread.shutdown(wait=True)
