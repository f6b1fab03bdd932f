"""The front's nginx config as rendered from the committed template: what nginx accepts, and the limits it holds."""

import json
import os
import re
from pathlib import Path

import pytest

from app.contract import student
from app.errors import FRONT_LIMIT
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


def test_a_pages_burst_of_12_passes_at_once_and_one_student_cannot_take_the_box(tmp_path: Path) -> None:
    text = render(config(tmp_path))
    assert number(text, r"http2_max_concurrent_streams (\d+);") >= 12
    per_student = number(text, r"limit_conn student_requests (\d+);")
    assert per_student >= 12
    # The rate limit's burst lets 12 through at once, undelayed (a page load's 29 files beside them).
    assert number(text, r"limit_req zone=student_rate burst=(\d+) nodelay;") >= 12 + 29
    # ① lets two page bursts through at once, then limits a looping script (each burst of 12 may kill the box).
    assert number(text, r"limit_req zone=student_naive burst=(\d+) nodelay;") >= 2 * 12
    assert text.count("limit_req zone=student_rate burst=100 nodelay;") == 2  # ①'s location keeps the general rate
    assert text.count("limit_req zone=address_rate burst=") == 2
    assert "listen 18443 ssl http2;" in text and "proxy_next_upstream off;" in text


def test_a_student_is_the_pages_key_and_a_request_without_one_is_its_address(tmp_path: Path) -> None:
    """The front's key pattern is the box's (app/contract/student.py): a key the box gives is a key nginx takes."""
    text = render(config(tmp_path))
    student_map = r'map \$cookie_lab_student \$student \{\s*"~(.+)" "k\$cookie_lab_student";\s*default (\S+);'
    mapped = re.search(student_map, text)
    assert mapped, "the student map"
    assert mapped.group(1) == student.KEY.pattern and mapped.group(2) == "$binary_remote_addr"
    assert student.COOKIE == "lab_student"
    for zone in ("student_requests", "student_live", "student_rate", "student_naive"):
        assert re.search(rf"_zone \$student zone={zone}:", text), zone
    for zone in ("address_requests", "address_live", "address_rate", "address_naive"):
        assert re.search(rf"_zone \$binary_remote_addr zone={zone}:", text), zone


@pytest.mark.parametrize("size", [1, 12, 40, 100])
def test_one_school_address_holds_a_whole_class_of_students(tmp_path: Path, size: int) -> None:
    """LAB_CLASS_SIZE students behind one NAT address each get a student's share; the class's own cap still holds."""
    text = render(config(tmp_path, class_size=size))
    student_share = {
        "rate": number(text, r"zone=student_rate:10m rate=(\d+)r/s;"),
        "burst": number(text, r"limit_req zone=student_rate burst=(\d+) nodelay;"),
        "naive": number(text, r"zone=student_naive:10m rate=(\d+)r/m;"),
        "naive_burst": number(text, r"limit_req zone=student_naive burst=(\d+) nodelay;"),
        "live": number(text, r"limit_conn student_live (\d+);"),
        "requests": number(text, r"limit_conn student_requests (\d+);"),
    }
    assert number(text, r"zone=address_rate:10m rate=(\d+)r/s;") == size * student_share["rate"]
    assert number(text, r"limit_req zone=address_rate burst=(\d+) nodelay;") == size * student_share["burst"]
    assert number(text, r"zone=address_naive:10m rate=(\d+)r/m;") == size * student_share["naive"]
    assert number(text, r"limit_req zone=address_naive burst=(\d+) nodelay;") == size * student_share["naive_burst"]
    assert number(text, r"limit_conn address_live (\d+);") == size * student_share["live"]
    class_cap = number(text, r"limit_conn class_requests (\d+);")
    assert number(text, r"limit_conn address_requests (\d+);") == min(size * student_share["requests"], class_cap)


@pytest.mark.parametrize("size", [0, -1, 501])
def test_a_class_size_out_of_range_is_refused(tmp_path: Path, size: int) -> None:
    with pytest.raises(ValueError, match="LAB_CLASS_SIZE"):
        render(config(tmp_path, class_size=size))


def test_the_front_tells_the_box_what_the_class_typed(tmp_path: Path) -> None:
    text = render(config(tmp_path))
    assert "proxy_set_header X-Forwarded-Proto $scheme;" in text
    assert "proxy_set_header X-Forwarded-Host $http_host;" in text
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in text  # set, never appended to what a client sent
    assert Settings().trusted_proxy == "127.0.0.1"  # the front reaches the box over loopback


def test_what_the_front_opens_to_the_box_stays_under_the_boxs_own_caps(tmp_path: Path) -> None:
    text, settings = render(config(tmp_path)), Settings()
    requests = number(text, r"limit_conn class_requests (\d+);")
    live = number(text, r"limit_conn class_live (\d+);")
    idle = number(text, r"keepalive (\d+);")
    workers = number(text, r"worker_processes (\d+);")
    assert live < settings.max_live_connections
    assert requests + live + idle * workers < settings.max_connections
    # Live sockets count apart, per client too: a page's WebSocket never takes a request's place.
    assert text.count("limit_conn student_live") == text.count("limit_conn class_live") == 2


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
