"""Opens the job store that `LAB_JOB_STORE` names: `memory://`, `sqlite:///path`, `redis://…`."""

from pathlib import Path

from app.jobs.in_memory import MemoryJobStore
from app.jobs.redis import RedisJobStore
from app.jobs.sqlite import SqliteJobStore
from app.jobs.store import JobStore
from app.settings import PROJECT_ROOT


def sqlite_path(url: str) -> Path:
    """`sqlite:///data/jobs.db` is relative to the project root; `sqlite:////abs/jobs.db` is absolute."""
    path = Path(url.removeprefix("sqlite:///"))
    return path if path.is_absolute() else PROJECT_ROOT / path


async def open_store(url: str) -> JobStore:
    if url.startswith("memory://"):
        return MemoryJobStore()
    if url.startswith("sqlite:///"):
        return await SqliteJobStore(sqlite_path(url)).open()
    if url.startswith(("redis://", "rediss://", "unix://")):
        return RedisJobStore(url)
    raise ValueError(f"unsupported LAB_JOB_STORE {url!r}; expected memory://, sqlite:///PATH or redis://HOST:PORT/DB")
