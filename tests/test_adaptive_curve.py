"""⑤'s cost curve on the page: the committed figure is the committed benchmark's medians (not numbers typed in),
the medians are taken the way the page says, and the figure sits in ⑤'s note."""

import json
from pathlib import Path
from typing import Any

from bench.adaptive_curve import BURSTS, CURVE, STREAMS, curve, newest, write
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

HOST = "vm (2 CPUs, 24 GiB, x86_64, no GPU) (AMD EPYC), lab pinned to core 1, one onnxruntime thread"


def stream_row(date: str, run: int, path: str, multiple: float, **given: Any) -> dict[str, Any]:
    row = {
        "date": date,
        "host": HOST,
        "path": path,
        "multiple": multiple,
        "duration_s": 60.0,
        "client_timeout_s": 30.0,
        "run": run,
        "capacity_per_s": 1.0,
        "one_review_s": 1.0,
        "counts": {"ok": 10},
        "served_vs_capacity": 1.0,
        "p95_served_s": 2.0,
        "p99_refused_s": None,
    }
    return row | given


def test_the_committed_figure_is_the_newest_runs_medians() -> None:
    assert json.loads(CURVE.read_text(encoding="utf-8")) == json.loads(
        json.dumps(curve(newest(STREAMS), [b for b in newest(BURSTS) if b["date"] == newest(STREAMS)[0]["date"]]))
    )


def test_medians_over_repeats_of_the_newest_run_only(tmp_path: Path) -> None:
    old, new = "2026-01-01T00:00:00+00:00", "2026-02-01T10:30:00+00:00"
    rows = [stream_row(old, 1, "adaptive", 2.0, served_vs_capacity=9.0)]
    rows += [
        stream_row(
            new,
            run,
            "adaptive",
            2.0,
            served_vs_capacity=v,
            p95_served_s=p,
            p99_refused_s=r,
            counts={"ok": 6, "rejected_429": 4},
        )
        for run, v, p, r in ((1, 0.8, 2.0, 0.01), (2, 1.2, 4.0, None), (3, 1.0, 3.0, 0.03))
    ]
    rows += [stream_row(new, run, "limited", 0.5, counts={"ok": 9, "client_timeout": 1}) for run in (1, 2, 3)]
    streams, bursts, out = tmp_path / "s.jsonl", tmp_path / "b.jsonl", tmp_path / "c.json"
    streams.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    burst = {
        "host": HOST,
        "path": "adaptive",
        "burst": 12,
        "one_review_s": 1.0,
        "first_answer_s": 0.5,
        "served": 7,
        "slowest_served_s": 6.0,
        "p99_refused_s": 0.02,
    }
    bursts.write_text(json.dumps(burst | {"date": old, "run": 1, "served": 99}) + "\n", encoding="utf-8")
    data = write(streams, bursts, out)
    assert json.loads(out.read_text(encoding="utf-8")) == data
    assert (data["date"], data["time_utc"], data["core"], data["runs"]) == ("2026-02-01", "10:30", 1, 3)
    assert data["host_ko"] == "실습 서버(코어 2개, AMD EPYC, 그래픽카드 없음)"  # the brand as written
    limited, adaptive = data["streams"]  # in the registry's order, whatever the file's
    assert (limited["path"], limited["gave_up_share"], limited["refused_share"]) == ("limited", 0.1, 0.0)
    assert adaptive["served_vs_capacity"] == 1.0 and adaptive["p95_reviews"] == 3.0
    assert adaptive["p99_refused_s"] == 0.02  # the median of the runs that refused anyone
    assert adaptive["refused_share"] == 0.4
    assert data["bursts"] == []  # an older run's bursts are not this run's


async def test_the_figure_is_in_the_adaptive_note_and_its_data_is_served(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
        note = html[html.index('data-path-note="adaptive"') :]
        assert 'id="adaptive-curve"' in note[: note.index('</div>\n  <p class="note-429">')]
        assert (await client.get("/static/js/costcurve.js")).status_code == 200
        served = (await client.get("/static/adaptive-curve.json")).json()
    assert served == json.loads(CURVE.read_text(encoding="utf-8"))
