"""The ① note says where the cliff is on this box: the committed bench.cliff run, by crowd size, with its edge."""

import json
from pathlib import Path

import pytest

from app.api import page
from app.api.measured import naive_cliff
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


def cliff_file(path: Path, lived: dict[int, list[bool]]) -> Path:
    rows: list[dict[str, object]] = [{"host": "AMD EPYC", "started": "2026-12-05 04:30:12 UTC"}]
    rows += [{"server": "seed", "n": 8, "try": 1, "died": True}]  # the seed's server: not the lab's box
    rows += [
        {"server": "lab", "n": n, "try": i + 1, "died": not ok}
        for n, tries in lived.items()
        for i, ok in enumerate(tries)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_the_edge_is_the_smallest_crowd_the_box_did_not_always_survive(tmp_path: Path) -> None:
    cliff = naive_cliff(
        cliff_file(tmp_path / "c.jsonl", {4: [True] * 3, 6: [True] * 3, 8: [True, False, True], 12: [False] * 3})
    )
    assert cliff is not None
    assert [(s.n, s.lived, s.tries) for s in cliff.steps] == [(4, 3, 3), (6, 3, 3), (8, 2, 3), (12, 0, 3)]
    assert cliff.edge == 8 and cliff.started == "2026-12-05 04:30 UTC"
    assert naive_cliff(cliff_file(tmp_path / "d.jsonl", {4: [True] * 2})).edge is None  # type: ignore[union-attr]


def test_a_missing_or_odd_cliff_file_quotes_nothing(tmp_path: Path) -> None:
    assert naive_cliff(tmp_path / "none.jsonl") is None
    (tmp_path / "odd.jsonl").write_text('{"host": 1}\n[1, 2]\n', encoding="utf-8")
    assert naive_cliff(tmp_path / "odd.jsonl") is None


async def test_the_naive_note_shows_the_band_in_korean_with_its_edge(
    lab_client: LabClientFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = cliff_file(tmp_path / "c.jsonl", {6: [True] * 3, 8: [True, False, True], 10: [False] * 3})
    monkeypatch.setattr(page, "naive_cliff", lambda: naive_cliff(path))
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
    assert "절벽은 한 줄이 아니라 띠입니다" in html
    assert "8개 — 3번 중\n      2번 살아남음 <b>← 경계</b>" in html and "<b>8개부터</b> 죽기 시작합니다" in html
    assert "2026-12-05 04:30 UTC, 실습 서버(AMD EPYC)" in html
