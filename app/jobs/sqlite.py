"""Jobs in an embedded SQLite file (WAL): survives a hard kill, needs no server, one box.

Several processes on one box may share the file: every claim and every conditional
write runs in a `BEGIN IMMEDIATE` transaction, which takes SQLite's write lock first.
"""

import asyncio
import os
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from app.errors import StoreUnavailable
from app.jobs import sqlite_rows as rows
from app.jobs.models import Expect, Job, JobStatus, WebhookState
from app.jobs.store import CLAIM_SCAN, Ahead, QueueFull, claimed, empty_counts, is_due, is_overdue

T = TypeVar("T")


class SqliteJobStore:
    """One connection, used only from one dedicated thread, so the event loop never blocks on disk.

    The table and the row mapping are in sqlite_rows.py; this class owns the thread, the
    transactions and the store's operations.
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
        self._conn = rows.connect(self.path)
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

    async def add(self, job: Job, max_queued: int | None = None) -> tuple[Job, bool]:
        problem = await self.check()
        if problem is not None:  # a 202 now would be a promise no restart keeps
            raise StoreUnavailable(problem)

        def add(db: sqlite3.Connection) -> tuple[Job, bool]:
            if job.idempotency_key is not None:
                held = rows.select(db, "idempotency_key = ?", (job.idempotency_key,))
                if held:
                    return held[0], False
            if job.status is JobStatus.QUEUED and max_queued is not None:
                queued = int(db.execute("SELECT COUNT(*) FROM jobs WHERE status = 'queued'").fetchone()[0])
                if queued >= max_queued:
                    raise QueueFull(queued)
            if job.status is JobStatus.QUEUED:  # inside the write lock: no other insert or claim between
                row = db.execute("SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')").fetchone()
                job.ahead_at_add = int(row[0])
            job.seq = rows.insert(db, job)
            rows.update(db, job)  # the doc carries its seq too
            rows.bump(db)
            return job, True

        return await self._call(self._write, add)

    async def get(self, job_id: str) -> Job | None:
        jobs = await self._call(rows.select, self._db, "id = ?", (job_id,))
        return jobs[0] if jobs else None

    async def get_by_idempotency_key(self, key: str) -> Job | None:
        jobs = await self._call(rows.select, self._db, "idempotency_key = ?", (key,))
        return jobs[0] if jobs else None

    async def claim_next(self, owner: str, lease_s: float, now: float) -> Job | None:
        def claim(db: sqlite3.Connection) -> Job | None:
            for job in rows.select(db, "status = 'queued' ORDER BY seq LIMIT ?", (CLAIM_SCAN,)):
                if is_due(job, now):
                    rows.update(db, claimed(job, owner, lease_s, now))
                    rows.bump(db)
                    return job
            return None

        return await self._call(self._write, claim)

    async def replace(self, job: Job, expect: Expect) -> bool:
        def replace(db: sqlite3.Connection) -> bool:
            current = rows.select(db, "id = ?", (job.id,))
            if not current or not expect.holds(current[0], job):
                return False
            rows.update(db, job)
            rows.bump(db)
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
            for job in rows.select(db, "status = 'running'"):
                if job.owner == owner:
                    job.lease_until = now + lease_s
                    rows.update(db, job)
                    held.add(job.id)
            return held

        return await self._call(self._write, beat)

    async def lapsed(self, now: float) -> list[Job]:
        return await self._call(rows.select, self._db, "status = 'running' AND lease_until < ?", (now,))

    async def overdue(self, now: float) -> list[Job]:
        queued = await self._call(rows.select, self._db, "status = 'queued' ORDER BY seq")
        return [job for job in queued if is_overdue(job, now)]

    async def webhooks_due(self, now: float, limit: int) -> list[Job]:
        return await self._call(
            rows.select,
            self._db,
            "webhook_state = ? AND webhook_next_at <= ? ORDER BY webhook_next_at LIMIT ?",
            (WebhookState.PENDING.value, now, limit),
        )

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
            rows.bump(db, cursor.rowcount)
            return cursor.rowcount

        return await self._call(self._write, forget)

    async def close(self) -> None:
        if self._conn is not None:
            await self._call(self._conn.close)
            self._conn = None
        self._thread.shutdown(wait=True)
