"""The instructor hears how many requests the front itself refused, and the log of them never grows without bound."""

from collections import Counter
from pathlib import Path

import pytest

from app.front import refusals as module
from app.front.refusals import Refusals


def line(path: str) -> bytes:
    return f"1764900000.123 REJECTED - {path}\n".encode()


def test_refusals_are_counted_once_by_path_and_a_half_written_line_waits(tmp_path: Path) -> None:
    log = tmp_path / "front-refusals.log"
    seen = Refusals(log)
    assert seen.since_last() == {}  # nginx has refused nobody yet: no file
    log.write_bytes(line("/api/limited/predict?burst=a&i=1") * 3 + line("/api/naive/predict") + b"1764900001.0 REJ")
    assert seen.since_last() == {"/api/limited/predict": 3, "/api/naive/predict": 1}
    with log.open("ab") as more:
        more.write(b"ECTED - /api/stats\n")
    assert seen.since_last() == {"/api/stats": 1}
    assert seen.since_last() == {}


def test_the_log_is_emptied_once_read_past_its_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "front-refusals.log"
    monkeypatch.setattr(module, "KEEP_BYTES", 1000)
    seen = Refusals(log)
    log.write_bytes(line("/api/limited/predict") * 100)
    assert sum(seen.since_last().values()) == 100
    assert log.stat().st_size == 0
    with log.open("ab") as more:  # nginx appends (O_APPEND): its next line lands at the new start
        more.write(line("/health"))
    assert seen.since_last() == {"/health": 1}


def test_what_an_earlier_front_refused_is_not_reported_again(tmp_path: Path) -> None:
    log = tmp_path / "front-refusals.log"
    log.write_bytes(line("/api/limited/predict") * 467)  # the last class's flood, still in the state folder
    seen = Refusals(log)
    assert seen.since_last() == {}
    with log.open("ab") as more:
        more.write(line("/api/naive/predict"))
    assert seen.since_last() == {"/api/naive/predict": 1}


def test_the_instructor_line_names_the_front_and_says_it_is_not_the_box() -> None:
    assert Refusals.said(Refusals(Path("/nonexistent")).since_last(), 1) == ""
    said = Refusals.said(Counter({"/api/limited/predict": 7, "/api/naive/predict": 2}), 1)
    assert "refused 9 requests" in said and "front_limit" in said and "not the box" in said
