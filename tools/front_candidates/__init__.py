"""The fronts measured against each other (docs/reliability.md): `with candidate("nginx", box_url, port) as url:`.

nginx is the lab's own (app/front); Caddy's Caddyfile is the one the lab used until 2026-12-02;
HAProxy's config is written for this comparison only.
"""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from app.front.nginx import FrontConfig, start_nginx
from app.front.tls import certificate
from kit.serverproc import stop_process, wait_healthy

HERE = Path(__file__).parent
NAMES = ("nginx", "caddy", "haproxy")


def start(name: str, upstream: str, port: int, state: Path) -> "subprocess.Popen[bytes]":
    cert, key = certificate("localhost", state / "tls")
    log = (state / "front.log").open("ab")
    if name == "nginx":
        return start_nginx(FrontConfig(port, upstream, state, cert, key))
    if name == "caddy":
        env = {
            **os.environ,
            "LAB_DOMAIN": "localhost",
            "LAB_HTTPS_PORT": str(port),
            "LAB_FRONT_UPSTREAM": upstream,
            "LAB_FRONT_STATE": str(state / "data"),
            "HOME": str(state),
            "XDG_CONFIG_HOME": str(state / "config"),
            "XDG_DATA_HOME": str(state / "data"),
        }
        argv = ["caddy", "run", "--config", str(HERE / "Caddyfile"), "--adapter", "caddyfile"]
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    pem = state / "front.pem"
    pem.write_bytes(cert.read_bytes() + key.read_bytes())
    text = (HERE / "haproxy.cfg").read_text().replace("@PORT@", str(port)).replace("@PEM@", str(pem))
    config = state / "haproxy.cfg"
    config.write_text(text.replace("@UPSTREAM@", upstream))
    return subprocess.Popen(["haproxy", "-db", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT)


def log_of(name: str, state: Path) -> Path:
    return state / ("error.log" if name == "nginx" else "front.log")


@contextmanager
def candidate(name: str, box_url: str, port: int) -> Iterator[tuple[str, Path]]:
    """The front `name` on https://localhost:`port` before `box_url`: its URL and its log file."""
    state = Path(tempfile.mkdtemp(prefix=f"lab-{name}-"))
    process = start(name, urlsplit(box_url).netloc, port, state)
    url = f"https://localhost:{port}"
    try:
        wait_healthy(url, limit_s=30, verify=False)  # the box behind it answers: the front is up
        yield url, log_of(name, state)
    finally:
        stop_process(process, limit_s=10)
        shutil.rmtree(state, ignore_errors=True)
