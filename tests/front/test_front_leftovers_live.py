"""The next `app.front` after a front killed with its nginx: the lab's own nginx left on the class's port (by
the pid file in the front's state folder) is stopped; anything else on the port is named and never killed."""

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from app.front.__main__ import prepared
from app.front.nginx import start_nginx
from app.front.ports import taken
from app.settings import Settings
from kit.serverproc import free_port
from tests.front.classroom import alive
from tests.front_proxy import front_config, need_nginx

pytestmark = pytest.mark.slow

GUARD_S = 30.0  # failure guards, never delays
LISTEN = (  # a process that is not the lab's: it listens until its stdin closes
    "import socket, sys; s = socket.create_server(('0.0.0.0', int(sys.argv[1]))); "
    "print('ready', flush=True); sys.stdin.read()"
)


def listening(port: int) -> None:
    deadline = time.monotonic() + GUARD_S
    while not taken("0.0.0.0", port):
        assert time.monotonic() < deadline, f"nothing listens on {port}"
        time.sleep(0.05)


def nginx_on(state: Path, port: int) -> "subprocess.Popen[bytes]":
    state.mkdir(parents=True, exist_ok=True)
    process = start_nginx(front_config(state, "http://127.0.0.1:9", port))
    listening(port)
    return process


def settings(state: Path, https_port: int) -> Settings:
    return Settings(front_state_dir=state, https_port=https_port, port=free_port())


@pytest.fixture
def leftovers() -> Iterator[list[int]]:
    """Pids to kill after the test, whatever it left."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_the_next_start_stops_the_lab_nginx_a_killed_front_left_on_its_port(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, leftovers: list[int]
) -> None:
    """The front and nginx's master killed at once (the OOM killer, a `kill -9` of both): the worker is left."""
    need_nginx()
    state, port = tmp_path / "front", free_port()
    master = nginx_on(state, port)
    workers = [p.pid for p in psutil.Process(master.pid).children()]
    leftovers += workers
    os.kill(master.pid, signal.SIGKILL)
    master.wait()
    assert workers and all(alive(pid) for pid in workers) and taken("0.0.0.0", port)
    with caplog.at_level(logging.WARNING, logger="app.front"):
        config = prepared(settings(state, port))
    assert not isinstance(config, str), config  # our own nginx worker is stopped, not named a stranger
    assert not any(alive(pid) for pid in workers) and not taken("0.0.0.0", port)
    stopped = [r.getMessage() for r in caplog.records if "Stopped the lab's nginx" in r.getMessage()]
    assert len(stopped) == len(workers) and f"pid {workers[0]} (nginx: worker process)" in stopped[0], stopped


@pytest.mark.parametrize("foreign", ["python", "another_labs_nginx"])
def test_a_port_held_by_something_else_is_named_and_never_killed(
    tmp_path: Path, leftovers: list[int], foreign: str
) -> None:
    """Even when the state folder's pid file names it (a pid reused since, or another checkout's nginx)."""
    need_nginx()
    state, port = tmp_path / "front", free_port()
    state.mkdir()
    if foreign == "python":
        holder = subprocess.Popen(
            [sys.executable, "-c", LISTEN, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert holder.stdout is not None and holder.stdout.readline() == b"ready\n"
        named = "python"
    else:
        holder = nginx_on(tmp_path / "other-checkout", port)
        named = "nginx"
    family = [holder.pid] + [p.pid for p in psutil.Process(holder.pid).children()]
    leftovers += family
    (state / "nginx.pid").write_text(f"{holder.pid}\n")
    try:
        line = prepared(settings(state, port))
        assert isinstance(line, str) and f"Port {port} is taken by pid " in line and named in line, line
        assert all(alive(pid) for pid in family) and taken("0.0.0.0", port)
    finally:
        for pipe in (holder.stdin, holder.stdout):
            if pipe is not None:
                pipe.close()
        holder.terminate()
        holder.wait(timeout=GUARD_S)
