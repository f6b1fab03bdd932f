"""The classroom front (app/front) in a test: Caddy on a free port, its CA and state in a temporary folder."""

import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from app.bench.serverproc import free_port, stop_process
from app.front.caddy import front_url, start_caddy, wait_front

__all__ = ["Front", "fronted"]


@dataclass
class Front:
    url: str
    state_dir: Path

    def log(self) -> str:
        return (self.state_dir / "caddy.log").read_text(errors="replace")


@contextmanager
def fronted(box_url: str) -> Iterator[Front]:
    """`with fronted(box.url) as front:` serves `front.url` (https://localhost:PORT, HTTP/2) in front of the box."""
    if shutil.which("caddy") is None:
        pytest.skip("caddy is not installed (`just setup` installs it)")
    state_dir = Path(tempfile.mkdtemp(prefix="lab-front-"))
    port = free_port()
    upstream = urlsplit(box_url).netloc
    process = start_caddy(domain="localhost", https_port=port, upstream=upstream, state_dir=state_dir)
    front = Front(front_url("localhost", port), state_dir)
    try:
        wait_front(front.url, process)
        yield front
    except BaseException:
        sys.stderr.write(front.log()[-4000:])
        raise
    finally:
        stop_process(process, limit_s=10)
        shutil.rmtree(state_dir, ignore_errors=True)
