"""A lab server in a subprocess for benchmarks: started fresh, stopped cleanly."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

import httpx

from app.settings import PROJECT_ROOT


class ServerProcess:
    """`with ServerProcess(model_dir, LAB_X="1") as server:` → `server.url`, `server.pid`."""

    def __init__(self, model_dir: Path, **settings: str) -> None:
        self._env = {**os.environ, "LAB_MODEL_DIR": str(model_dir), **settings}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def __enter__(self) -> "ServerProcess":
        command = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(self.port)]
        command += ["--no-access-log", "--log-level", "warning"]
        self._process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=self._env)
        wait_healthy(self.url, self._process, limit_s=120)
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._process is not None:
            stop_process(self._process)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(url: str, process: "subprocess.Popen[bytes]", limit_s: float = 60.0, probe: str = "/health") -> None:
    """Poll `url + probe` until it answers 200; fail at once if the process died."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(f"{url}{probe}", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url}{probe} never answered 200")


def stop_process(process: "subprocess.Popen[bytes]", limit_s: float = 30.0) -> None:
    """SIGTERM (a graceful shutdown), then SIGKILL if it does not exit in time."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
