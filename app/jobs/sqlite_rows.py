"""The SQLite store's table and how a job maps onto a row: schema, connection settings, reads and writes.

Every function takes the connection it runs on and runs only on the store's one thread.
`doc` holds the whole record; the other columns copy the fields that queries select on.
"""

import json
import sqlite3
from pathlib import Path
from typing import Any

from app.jobs.models import Job

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


def connect(path: Path) -> sqlite3.Connection:
    """Open (and create) the file in WAL mode, in autocommit: the store opens its own transactions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=10.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    # FULL: a committed ticket survives even a power cut, not only a killed process.
    conn.execute("PRAGMA synchronous=FULL")
    conn.executescript(SCHEMA)
    return conn


def to_row(job: Job) -> dict[str, Any]:
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


def from_row(doc: str, seq: int) -> Job:
    job = Job.from_dict(json.loads(doc))
    job.seq = seq
    return job


def select(db: sqlite3.Connection, where: str, params: tuple[Any, ...] = ()) -> list[Job]:
    rows = db.execute(f"SELECT doc, seq FROM jobs WHERE {where}", params).fetchall()
    return [from_row(doc, seq) for doc, seq in rows]


def insert(db: sqlite3.Connection, job: Job) -> int:
    """Insert a new job's row; returns the seq SQLite gave it."""
    cursor = db.execute(
        "INSERT INTO jobs (id, status, idempotency_key, lease_until, finished_at, webhook_state, "
        "webhook_next_at, doc) VALUES (:id, :status, :idempotency_key, :lease_until, :finished_at, "
        ":webhook_state, :webhook_next_at, :doc)",
        to_row(job),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def update(db: sqlite3.Connection, job: Job) -> None:
    db.execute(
        "UPDATE jobs SET status=:status, lease_until=:lease_until, finished_at=:finished_at, "
        "webhook_state=:webhook_state, webhook_next_at=:webhook_next_at, doc=:doc WHERE id=:id",
        to_row(job),
    )


def bump(db: sqlite3.Connection, changes: int = 1) -> None:
    """Count job changes in the same transaction, for watchers on every box (not lease renewals)."""
    if changes:
        db.execute("UPDATE meta SET value = value + ? WHERE name = 'version'", (changes,))
