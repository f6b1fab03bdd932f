"""`python -m app.front` killed with SIGKILL takes nginx and the box with it: nothing is left on their ports."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from app.front.ports import taken
from app.settings import PROJECT_ROOT
from kit.live import TINY_MODEL
from kit.serverproc import free_port
from tests.front_proxy import need_nginx

pytestmark = pytest.mark.slow


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_kill_9_of_the_front_leaves_neither_nginx_nor_the_box_running() -> None:
    need_nginx()
    state = Path(tempfile.mkdtemp(prefix="lab-front-kill-"))
    https_port, box_port = free_port(), free_port()
    env = {
        **os.environ,
        "LAB_MODEL_DIR": str(TINY_MODEL),
        "LAB_JOB_STORE": f"sqlite:///{state}/jobs.db",
        "LAB_KNOBS_FILE": f"{state}/knobs.json",
        "LAB_FRONT_STATE_DIR": str(state / "front"),
        "LAB_HTTPS_PORT": str(https_port),
        "LAB_PORT": str(box_port),
    }
    log = (state / "front.log").open("w+")
    front = subprocess.Popen([sys.executable, "-m", "app.front"], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=log)
    family: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 180  # a failure guard: the box loads the model first
        while "the class's address" not in (state / "front.log").read_text():
            assert front.poll() is None and time.monotonic() < deadline, (state / "front.log").read_text()
            time.sleep(0.2)
        family = psutil.Process(front.pid).children(recursive=True)
        assert any("nginx" in p.name() for p in family) and any("app.box" in " ".join(p.cmdline()) for p in family)
        os.kill(front.pid, signal.SIGKILL)
        front.wait()
        deadline = time.monotonic() + 90  # the box drains (LAB_SHUTDOWN_GRACE_S), nginx stops at once
        while any(alive(p.pid) for p in family) or taken("0.0.0.0", https_port) or taken("127.0.0.1", box_port):
            assert time.monotonic() < deadline, [p.pid for p in family if alive(p.pid)]
            time.sleep(0.2)
    finally:
        if front.poll() is None:
            front.kill()
        for survivor in (p for p in family if alive(p.pid)):  # only after a failure: leave nothing behind
            survivor.kill()
        log.close()
