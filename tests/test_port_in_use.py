"""A second server or box on a port already in use says so in one line and exits 1, before loading anything."""

import socket
import subprocess
import sys

import pytest

from kit.live import ROOT, TINY_MODEL


@pytest.mark.parametrize("module", ["app.serve", "app.box"])
def test_a_port_in_use_is_one_clear_line(module: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {"PATH": "/usr/bin:/bin", "LAB_MODEL_DIR": str(TINY_MODEL), "LAB_JOB_STORE": "memory://"}
        done = subprocess.run(
            [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,  # a failure guard
        )
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, lines
    assert f"127.0.0.1:{port}" in lines[0] and "in use" in lines[0]
    assert "Traceback" not in lines[0]
