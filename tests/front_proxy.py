"""The classroom front (app/front) in a test: nginx on a free port, its certificate and state in a temporary folder."""

import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from app.front.nginx import FrontConfig, nginx_binary, start_nginx
from app.front.ready import front_url
from app.front.tls import certificate
from kit.serverproc import free_port, stop_process

__all__ = ["Front", "front_config", "fronted", "need_nginx"]


@dataclass
class Front:
    url: str
    state_dir: Path
    pid: int

    def log(self) -> str:
        return (self.state_dir / "error.log").read_text(errors="replace")


def need_nginx() -> None:
    try:
        nginx_binary()
    except FileNotFoundError:
        pytest.skip("nginx is not installed (`just setup` installs it)")


def front_config(state_dir: Path, box_url: str, port: int = 18443) -> FrontConfig:
    cert, key = certificate("localhost", state_dir / "tls")
    return FrontConfig(port, urlsplit(box_url).netloc, state_dir, cert, key)


@contextmanager
def fronted(box_url: str) -> Iterator[Front]:
    """`with fronted(box.url) as front:` serves `front.url` (https://localhost:PORT, HTTP/2) in front of the box."""
    need_nginx()
    state_dir = Path(tempfile.mkdtemp(prefix="lab-front-"))
    port = free_port()
    process = start_nginx(front_config(state_dir, box_url, port))
    front = Front(front_url("localhost", port), state_dir, process.pid)
    try:
        deadline = time.monotonic() + 30
        while True:  # until nginx answers at all (a 502 while the box still loads counts: the front is up)
            assert process.poll() is None, f"nginx exited with {process.returncode}"
            try:
                httpx.get(f"{front.url}/health", verify=False, timeout=2)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the front never answered"
                time.sleep(0.05)
        yield front
    except BaseException:
        sys.stderr.write(front.log()[-4000:])
        raise
    finally:
        stop_process(process, limit_s=10)
        shutil.rmtree(state_dir, ignore_errors=True)
