"""A real lab server in a subprocess on 127.0.0.1, serving the tiny committed model (for tests and tools)."""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from app.settings import PROJECT_ROOT
from kit.serverproc import free_port, stop_process, wait_healthy

ROOT = PROJECT_ROOT
TINY_MODEL = ROOT / "tests" / "assets" / "tiny-reranker"


def slowed(seconds_per_review: float, *, warm: bool = True) -> dict[str, str]:
    """Settings that slow the tiny model's CPU to about this many seconds per median review (burning CPU, not sleeping).

    `live_server(**slowed(0.3))`: a bare server is never slowed or pinned unless a test asks like this.
    `warm=False` skips the start-up's warm-up and length calibration (five reviews at the slowed speed: 22 s of
    a 25 s start at 2 s a review), for a test whose server need not know long reviews from short (no ETA,
    no admission by predicted wait).
    """
    settings = {"LAB_BOX_SLOW": "1", "LAB_BOX_SECONDS_PER_REVIEW": str(seconds_per_review)}
    return settings if warm else settings | {"LAB_WARMUP": "0"}


@dataclass
class LiveServer:
    url: str
    process: "subprocess.Popen[bytes]"
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def open_files_limit(limit: int) -> Callable[[], None]:
    """A pre-exec step that caps the server's open files, as a small box (`ulimit -n`) would."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


def live_server(**settings: str) -> AbstractContextManager[LiveServer]:
    """`with live_server(LAB_LIMITED_SEATS="2") as server:` runs `python -m app.serve` until the block ends."""
    return serving(settings)


@contextmanager
def serving(settings: dict[str, str], max_open_files: int | None = None) -> Iterator[LiveServer]:
    """`live_server`, optionally under an open-file limit (`ulimit -n`)."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="lab-server-data-")  # tickets default to a sqlite file of its own
    env = {**os.environ, "LAB_MODEL_DIR": str(TINY_MODEL), "LAB_JOB_STORE": f"sqlite:///{data_dir}/jobs.db"}
    env |= {"LAB_KNOBS_FILE": f"{data_dir}/knobs.json", **settings}
    with tempfile.NamedTemporaryFile(prefix="lab-server-", suffix=".log", delete=False) as log_file:
        log_path = Path(log_file.name)
        process = subprocess.Popen(
            [sys.executable, "-m", "app.serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=None if max_open_files is None else open_files_limit(max_open_files),
        )
    server = LiveServer(f"http://127.0.0.1:{port}", process, log_path)
    try:
        wait_healthy(server.url, process, limit_s=180)  # a failure guard: a loaded 2-core host starts slowly
        yield server
    except BaseException:
        sys.stderr.write(server.log())
        raise
    finally:
        stop_process(process, limit_s=15)
        log_path.unlink(missing_ok=True)
        shutil.rmtree(data_dir, ignore_errors=True)
