"""Before anything starts: a bad LAB_DOMAIN or a taken port is one clear line and a non-zero exit."""

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.front.__main__ import prepared
from app.front.ports import holder, taken
from app.settings import PROJECT_ROOT, Settings
from kit.serverproc import free_port


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port this test process listens on (on every interface, as the front would)."""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("0.0.0.0", 0))
        sock.listen()
        yield sock.getsockname()[1]


def settings(tmp_path: Path, **values: object) -> Settings:
    defaults: dict[str, object] = {
        "front_state_dir": tmp_path / "front",
        "port": free_port(),
        "https_port": free_port(),
    }
    return Settings(**(defaults | values))  # type: ignore[arg-type]


def test_a_taken_port_is_found_and_its_holder_named(held_port: int) -> None:
    assert taken("0.0.0.0", held_port) and taken("127.0.0.1", held_port)
    assert holder(held_port).startswith(f"pid {os.getpid()} (")
    assert not taken("127.0.0.1", free_port())


@pytest.mark.parametrize("which", ["https_port", "port"])
def test_the_front_will_not_start_on_a_taken_port_and_says_who_holds_it(
    tmp_path: Path, held_port: int, which: str
) -> None:
    line = prepared(settings(tmp_path, **{which: held_port}))
    assert isinstance(line, str) and f"Port {held_port} is taken by pid {os.getpid()}" in line and "\n" not in line
    assert ("LAB_HTTPS_PORT" if which == "https_port" else "LAB_PORT") in line
    assert not (tmp_path / "front").exists()  # nothing prepared, nothing started


@pytest.mark.parametrize("domain", ["lab.school.kr\nrespond injected", "lab.school.kr ", "a b", ""])
def test_a_bad_domain_stops_the_start_before_anything(tmp_path: Path, domain: str) -> None:
    line = prepared(settings(tmp_path, domain=domain))
    assert isinstance(line, str) and line.startswith("LAB_DOMAIN=") and "\n" not in line.replace("\\n", "")
    assert not (tmp_path / "front").exists()


def test_a_good_start_is_prepared_with_a_certificate_for_the_name(tmp_path: Path) -> None:
    try:
        config = prepared(settings(tmp_path, domain="192.168.0.12"))
    except FileNotFoundError:
        pytest.skip("nginx or openssl is not installed")
    if isinstance(config, str) and "missing" in config:
        pytest.skip(config)
    assert not isinstance(config, str), config
    assert config.cert.name == "192.168.0.12.crt" and (tmp_path / "front" / "nginx.conf").exists()


@pytest.mark.slow
def test_python_m_app_front_exits_non_zero_with_one_line_naming_the_holder(tmp_path: Path, held_port: int) -> None:
    env = {**os.environ, "LAB_HTTPS_PORT": str(held_port), "LAB_FRONT_STATE_DIR": str(tmp_path)}
    env["LAB_PORT"] = str(free_port())
    result = subprocess.run(
        [sys.executable, "-m", "app.front"], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"pid {os.getpid()}" in lines[0], result.stderr
