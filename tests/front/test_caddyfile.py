"""The committed Caddyfile as Caddy reads it with the launcher's values: no admin API, its own state, streams."""

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.front.caddy import CADDYFILE, caddy_env, front_url


def adapted(tmp_path: Path, domain: str) -> dict[str, Any]:
    if shutil.which("caddy") is None:
        if os.environ.get("CI"):
            pytest.fail("caddy is missing in CI: `just setup` installs it")
        pytest.skip("caddy is not installed")
    env = caddy_env(domain=domain, https_port=18443, upstream="127.0.0.1:18000", state_dir=tmp_path)
    argv = ["caddy", "adapt", "--config", str(CADDYFILE), "--adapter", "caddyfile"]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=True)
    config: dict[str, Any] = json.loads(result.stdout)
    return config


def test_the_front_has_no_admin_api_and_keeps_its_ca_in_its_own_folder(tmp_path: Path) -> None:
    config = adapted(tmp_path, "localhost")
    assert config["admin"] == {"disabled": True}
    assert config["storage"] == {"module": "file_system", "root": str(tmp_path / "data")}
    assert config["apps"]["pki"]["certificate_authorities"]["local"]["install_trust"] is False


def test_the_front_serves_only_https_and_h2_and_streams_to_the_box(tmp_path: Path) -> None:
    server = adapted(tmp_path, "192.168.0.12")["apps"]["http"]["servers"]["srv0"]
    assert server["listen"] == [":18443"] and server["protocols"] == ["h1", "h2"]
    assert server["automatic_https"] == {"disable_redirects": True}
    assert server["routes"][0]["match"] == [{"host": ["192.168.0.12"]}]
    proxy = server["routes"][0]["handle"][0]["routes"][0]["handle"][0]
    assert proxy["handler"] == "reverse_proxy" and proxy["upstreams"] == [{"dial": "127.0.0.1:18000"}]
    assert proxy["flush_interval"] == -1
    assert proxy["transport"]["keep_alive"]["idle_timeout"] == 5_000_000_000  # under the box's 10 s idle limit


def test_front_url_leaves_out_the_default_https_port() -> None:
    assert front_url("localhost", 8443) == "https://localhost:8443"
    assert front_url("lab.school.kr", 443) == "https://lab.school.kr"
    assert front_url("::1", 8443) == "https://[::1]:8443"
