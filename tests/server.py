"""A real lab server in a subprocess on 127.0.0.1, serving the tiny committed model."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
TINY_MODEL = ROOT / "tests" / "assets" / "tiny-reranker"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class LiveServer:
    url: str
    process: "subprocess.Popen[bytes]"
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def wait_healthy(url: str, process: "subprocess.Popen[bytes]", limit_s: float = 60.0) -> None:
    """Poll /health until it answers 200; fail at once if the process died."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} never became healthy")


@contextmanager
def live_server(**settings: str) -> Iterator[LiveServer]:
    """`with live_server(LAB_LIMITED_SEATS="2") as server:` runs uvicorn until the block ends."""
    port = free_port()
    data_dir = tempfile.mkdtemp(prefix="lab-server-data-")  # tickets default to a sqlite file of its own
    env = {**os.environ, "LAB_MODEL_DIR": str(TINY_MODEL), "LAB_JOB_STORE": f"sqlite:///{data_dir}/jobs.db", **settings}
    with tempfile.NamedTemporaryFile(prefix="lab-server-", suffix=".log", delete=False) as log_file:
        log_path = Path(log_file.name)
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    server = LiveServer(f"http://127.0.0.1:{port}", process, log_path)
    try:
        wait_healthy(server.url, process)
        yield server
    except BaseException:
        sys.stderr.write(server.log())
        raise
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log_path.unlink(missing_ok=True)
        shutil.rmtree(data_dir, ignore_errors=True)
