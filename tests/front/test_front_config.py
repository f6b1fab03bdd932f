"""The front's nginx config as rendered from the committed template: what nginx accepts, and the limits it holds."""

import json
import os
import re
from pathlib import Path

import pytest

from app.contract.errors import FRONT_LIMIT
from app.front.nginx import FrontConfig, nginx_binary, render, validate
from app.settings import Settings
from tests.front_proxy import front_config


def config(tmp_path: Path, **changes: object) -> FrontConfig:
    values: dict[str, object] = {
        "https_port": 18443,
        "upstream": "127.0.0.1:18000",
        "state_dir": tmp_path,
        "cert": tmp_path / "c.crt",
        "key": tmp_path / "c.key",
    }
    return FrontConfig(**(values | changes))  # type: ignore[arg-type]


def number(text: str, pattern: str) -> int:
    found = re.search(pattern, text)
    assert found, pattern
    return int(found.group(1))


def test_nginx_accepts_the_rendered_config(tmp_path: Path) -> None:
    try:
        nginx_binary()
    except FileNotFoundError:
        if os.environ.get("CI"):
            pytest.fail("nginx is missing in CI: `just setup` installs it")
        pytest.skip("nginx is not installed")
    assert validate(front_config(tmp_path, "http://127.0.0.1:18000")) == ""
    assert not re.search(r"@[A-Z0-9_]+@", (tmp_path / "nginx.conf").read_text())  # every placeholder filled


def test_a_pages_burst_of_12_passes_at_once_and_one_client_cannot_take_the_box(tmp_path: Path) -> None:
    text = render(config(tmp_path))
    assert number(text, r"http2_max_concurrent_streams (\d+);") >= 12
    per_client = number(text, r"limit_conn client_requests (\d+);")
    assert per_client >= 12
    # The rate limit's burst lets 12 through at once, undelayed (a page load's 26 files beside them).
    rate = re.search(r"limit_req zone=client_rate burst=(\d+) nodelay;", text)
    assert rate and int(rate.group(1)) >= 12 + 26
    # ① lets two page bursts through at once, then limits a looping script (each burst of 12 may kill the box).
    assert number(text, r"limit_req zone=client_naive burst=(\d+) nodelay;") >= 2 * 12
    assert text.count("limit_req zone=client_rate burst=100 nodelay;") == 2  # ①'s location keeps the general rate
    assert "listen 18443 ssl http2;" in text and "proxy_next_upstream off;" in text


def test_what_the_front_opens_to_the_box_stays_under_the_boxs_own_caps(tmp_path: Path) -> None:
    text, settings = render(config(tmp_path)), Settings()
    requests = number(text, r"limit_conn class_requests (\d+);")
    live = number(text, r"limit_conn class_live (\d+);")
    idle = number(text, r"keepalive (\d+);")
    workers = number(text, r"worker_processes (\d+);")
    assert live < settings.max_live_connections
    assert requests + live + idle * workers < settings.max_connections
    # Live sockets count apart, per client too: a page's WebSocket never takes a request's place.
    assert text.count("limit_conn client_live") == text.count("limit_conn class_live") == 2


def test_slow_clients_are_timed_out(tmp_path: Path) -> None:
    text = render(config(tmp_path))
    assert number(text, r"client_header_timeout (\d+)s;") <= 10
    assert number(text, r"client_body_timeout (\d+)s;") <= 10
    assert number(text, r"keepalive_timeout (\d+)s;") <= 60
    assert number(text, r"keepalive_requests (\d+);") <= 1000  # GOAWAY after it, reset streams included


def test_the_fronts_refusal_is_the_labs_one_error_shape(tmp_path: Path) -> None:
    body = re.search(r"return 429 '(.*)';", render(config(tmp_path)))
    assert body
    parsed = json.loads(body.group(1))
    assert parsed["error"] == FRONT_LIMIT.code and parsed["detail"]


@pytest.mark.parametrize(
    "changes",
    [
        {"state_dir": Path('/tmp/a"b')},
        {"state_dir": Path("/tmp/a;b")},
        {"cert": Path("/tmp/$host")},
        {"key": Path("/tmp/a\nb")},
        {"https_port": 0},
        {"https_port": 70000},
        {"upstream": "box.example:80"},
        {"upstream": "127.0.0.1:80; include /etc/passwd"},
    ],
)
def test_a_value_that_cannot_go_into_the_config_is_refused(tmp_path: Path, changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        render(config(tmp_path, **changes))
