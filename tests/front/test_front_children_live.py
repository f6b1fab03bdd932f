"""`python -m app.front` and its children live and die together: kill -9 of the front takes nginx and the box
with it, kill -9 of nginx's master takes its worker and the front, and nothing is left on their ports."""

import os
import signal
import time

import psutil
import pytest

from app.front.__main__ import prepared
from app.front.ports import taken
from app.settings import Settings
from tests.front.classroom import alive, classroom

pytestmark = pytest.mark.slow

GUARD_S = 90.0  # the box drains (LAB_SHUTDOWN_GRACE_S), nginx stops at once: a failure guard, never a delay


def until_gone(family: list[psutil.Process], *ports: tuple[str, int]) -> None:
    deadline = time.monotonic() + GUARD_S
    while any(alive(p.pid) for p in family) or any(taken(host, port) for host, port in ports):
        left = [f"{p.pid} {p.name()}" for p in family if alive(p.pid)]
        assert time.monotonic() < deadline, (left, [port for host, port in ports if taken(host, port)])
        time.sleep(0.2)


def test_kill_9_of_the_front_leaves_neither_nginx_nor_the_box_running() -> None:
    with classroom(LAB_BOX_SECONDS_PER_REVIEW="0") as room:
        room.wait_for("the class's address")
        family = room.family()
        assert any("nginx" in p.name() for p in family) and any("app.box" in " ".join(p.cmdline()) for p in family)
        os.kill(room.process.pid, signal.SIGKILL)
        room.process.wait()
        until_gone(family, ("0.0.0.0", room.https_port), ("127.0.0.1", room.box_port))


def test_kill_9_of_nginx_master_takes_its_worker_and_the_next_start_finds_the_port_free() -> None:
    """nginx's workers outlive a killed master: left alone they keep the class's port (a 502 to everyone) and the next
    `app.front` cannot start, so the front stops with its master and the next start finds the port free."""
    with classroom(LAB_BOX_SECONDS_PER_REVIEW="0") as room:
        room.wait_for("the class's address")
        master, workers = room.nginx()
        family = room.family()
        assert workers and all(w.name() == "nginx" for w in workers)
        os.kill(master.pid, signal.SIGKILL)
        assert room.process.wait(timeout=GUARD_S) == 1  # the front stops the box and exits, saying why
        until_gone(family, ("0.0.0.0", room.https_port), ("127.0.0.1", room.box_port))
        assert "nginx exited with -9; stopping the box" in room.output()
        again = Settings(front_state_dir=room.state / "front", https_port=room.https_port, port=room.box_port)
        config = prepared(again)
    assert not isinstance(config, str), config
