"""The instructor's knobs file is data: whatever is in it, the lab starts, keeps what fits its knobs and
says in one line per entry what it dropped: a hand-edited file must never keep the box from starting."""

import json
import logging
import os
from pathlib import Path

import pytest

from app.box.kept import KeptKnobs
from app.knobs.board import read_kept
from app.paths.registry import every_knob
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

MIB = 2**20


def kept(file: Path) -> dict[str, float]:
    return read_kept(file, every_knob())


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_the_values_that_fit_are_kept_and_each_misfit_is_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = tmp_path / "knobs.json"
    entries = {
        "limited_seats": 2.5,  # a fraction of a seat: never rounded to 2 behind the instructor's back
        "batch_max": -3,
        "queue_max_jobs": [50],
        "limited_max_wait_s": "30",
        "batch_window_s": True,
        "batch_max_wait_s": None,
        "memory_cap_bytes": 1100 * MIB,
        "box_seconds_per_review": 2.5,
        "no_such_knob": 1,
        "naive_memory_guard": 1,
    }
    text = json.dumps(entries)[:-1] + ', "limited_hold_grace_s": NaN}'  # not a knob anyone turns, and NaN
    file.write_text(text)
    with caplog.at_level(logging.WARNING):
        values = kept(file)
    assert values == {"memory_cap_bytes": 1100 * MIB, "box_seconds_per_review": 2.5, "naive_memory_guard": 1.0}
    lines = warnings(caplog)
    assert len(lines) == 8, lines
    for fragment in (
        "limited_seats moves in steps of 1 (seats) from 0: a whole number, not 2.5",
        "batch_max must lie between 1 and 64 reviews; got -3",
        "queue_max_jobs is not a number (a JSON array)",
        "limited_max_wait_s is not a number ('30')",
        "batch_window_s is not a number (True)",
        "batch_max_wait_s is not a number (None)",
        "no knob called 'no_such_knob'",
        "no knob called 'limited_hold_grace_s'",
    ):
        assert sum(fragment in line for line in lines) == 1, (fragment, lines)
    assert all("\n" not in line for line in lines)


def test_a_fraction_on_its_knobs_step_is_kept_and_one_between_steps_is_dropped_naming_the_step(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """⑤'s 1.5 was dropped as "not a whole number"; the server's reader and the supervisor's take one rule."""
    file = tmp_path / "knobs.json"
    entries = {
        "adaptive_target_reviews": 1.5,
        "adaptive_interval_reviews": 10,
        "box_seconds_per_review": 0.7,
        "memory_cap_bytes": 1100.5 * MIB,
        "batch_window_s": 0.0255,
    }
    file.write_text(json.dumps(entries))
    with caplog.at_level(logging.WARNING):
        values = kept(file)
        box = KeptKnobs(file).values()
    assert values == {"adaptive_target_reviews": 1.5, "adaptive_interval_reviews": 10, "box_seconds_per_review": 0.7}
    assert box == {"box_seconds_per_review": 0.7}
    lines = warnings(caplog)
    assert len(lines) == 4, lines  # the cap and the window, by each reader
    for why in (
        "batch_window_s moves in steps of 0.001 (s) from 0, not 0.0255",
        "memory_cap_bytes moves in steps of 1 (MiB) from 1000: a whole number, not 1100.5",
    ):
        assert sum(why in line for line in lines) == 2, (why, lines)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"limited_seats": ' + b"1" * 401 + b"}", "limited_seats is not a number (an integer of 401 digits)"),
        (b'{"limited_seats": 1e999}', "limited_seats is not a number (1e999 (not finite))"),
        (b'{"limited_seats": -Infinity}', "limited_seats is not a number (-Infinity)"),
        (b'{"limited_seats": -0.0}', None),
    ],
)
def test_numbers_no_knob_can_hold_are_dropped_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, why: str | None
) -> None:
    file = tmp_path / "knobs.json"
    file.write_bytes(content[:-1] + b', "batch_max": 4}')
    with caplog.at_level(logging.WARNING):
        values = kept(file)
    if why is None:
        assert values == {"limited_seats": 0.0, "batch_max": 4.0} and str(values["limited_seats"]) == "0.0"
    else:
        assert values == {"batch_max": 4.0}
        assert [line for line in warnings(caplog) if why in line], warnings(caplog)


def deep_list(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("empty", "not JSON"),
        ("garbage", "not UTF-8"),
        ("deep_100000", "over the 16384"),
        ("deep_5000", "nested 5001 deep, over 8"),
        ("top_level_list", "not a JSON object (list)"),
        ("top_level_number", "not a JSON object (int)"),
        ("ten_megabytes", "over the 16384"),
        ("directory", "not a regular file (a directory)"),
        ("fifo", "not a regular file (a FIFO)"),
        ("dev_zero", "not a regular file (a device)"),
    ],
)
def test_a_file_that_is_no_knobs_file_is_one_line_and_no_values(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, why: str
) -> None:
    file = tmp_path / "knobs.json"
    if name == "directory":
        file.mkdir()
    elif name == "fifo":
        os.mkfifo(file)
    elif name == "dev_zero":
        file.symlink_to("/dev/zero")
    elif name == "ten_megabytes":
        file.write_bytes(b" " * (10 * 10**6))
    else:
        contents = {
            "empty": b"",
            "garbage": bytes(range(256)),
            "deep_100000": deep_list(100_000),
            "deep_5000": b'{"limited_seats": ' + deep_list(5000) + b"}",
            "top_level_list": b'[["limited_seats", 8]]',
            "top_level_number": b"8",
        }
        file.write_bytes(contents[name])
    with caplog.at_level(logging.WARNING):
        assert kept(file) == {}
        assert KeptKnobs(file).values() == {}  # the supervisor's reader: the same rule
    lines = warnings(caplog)
    assert len(lines) == 2 and all(why in line for line in lines), lines


@pytest.mark.parametrize(
    "content",
    [
        b'{"limited_seats": ' + b"1" * 401 + b"}",
        deep_list(100_000),
        b'{"limited_seats": ' + deep_list(3000) + b"}",
        b'{"limited_seats": 2.5, "batch_max": NaN, "queue_max_jobs": -1}',
        bytes(range(256)),
    ],
)
async def test_the_lab_starts_whatever_the_knobs_file_holds(
    tmp_path: Path, lab_client: LabClientFactory, content: bytes
) -> None:
    (tmp_path / "knobs.json").write_bytes(content)
    async with lab_client(GatedScorer(gated=False)) as client:
        health = await client.get("/health")
        knobs = (await client.get("/api/knobs")).json()
    assert health.status_code == 200
    assert {k["setting"]: k["value"] for k in knobs["knobs"]}["limited_seats"] == 4  # the default stands


async def test_a_knobs_file_that_is_a_directory_still_lets_a_knob_turn(
    tmp_path: Path, lab_client: LabClientFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The change holds in the running server; only keeping it fails, and says so (not a 500)."""
    (tmp_path / "knobs.json").mkdir()
    token_file = tmp_path / "instructor-token"
    async with lab_client(GatedScorer(gated=False), instructor_token_file=token_file) as client:
        headers = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
        with caplog.at_level(logging.WARNING):
            turned = await client.put("/api/knobs/limited_seats", json={"value": 6}, headers=headers)
    assert turned.status_code == 200, turned.text
    assert any("Cannot keep the knobs" in line for line in warnings(caplog))
