"""⑤'s cost curve on the page: the committed figure is the committed benchmark's medians (not numbers typed in),
the medians are taken the way the page says, and the figure sits in ⑤'s note."""

import json
from pathlib import Path
from typing import Any

from app.settings import PROJECT_ROOT
from bench.adaptive_curve import BURSTS, CURVE, STREAMS, curve, newest, peer_points, tables, write
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
    committed = json.loads(CURVE.read_text(encoding="utf-8"))
    since = committed.get("since")  # a measurement made in several invocations names its first
    rows = newest(STREAMS, since)
    dates = {row["date"] for row in rows}
    fired = [b for b in newest(BURSTS, since) if b["date"] in dates]
    expected = curve(rows, fired) | {"since": since}
    if "peers" in committed:  # Infinity and LitServe, from the committed peer report it names
        expected["peers"] = peer_points(PROJECT_ROOT / committed["peers"]["source"])
    assert committed == json.loads(json.dumps(expected))


def peer_row(server: str, multiple: float, run: int, **given: Any) -> dict[str, Any]:
    row = {
        "server": server,
        "scenario": f"open {multiple:g}× Poisson ({2 * multiple:.2f}/s, 60 s, 30 s timeout)",
        "run": run,
        "sent": 100,
        "not_served_by": {"client_timeout": 40},
        "p95_s": 29.0,
        "served_in_window": 30,
        "served_work_in_window": 0.5,
        "offered_mean_chars": 60.0,
        "served_mean_chars": 50.0,
    }
    return row | given


def test_peers_are_drawn_from_their_open_streams_counted_within_the_window(tmp_path: Path) -> None:
    """Infinity and LitServe beside ②③⑤: answers within the sending window over that run's capacity, p95 in its
    reviews; the lab's own servers in the report, its bursts and rows from before the window was counted stay out."""
    rows = [
        peer_row("Infinity 0.0.78", 2.0, 1),
        peer_row("Infinity 0.0.78", 2.0, 2, served_in_window=24, served_work_in_window=0.4),
        peer_row("Infinity 0.0.78", 2.0, 3, served_in_window=36, served_work_in_window=0.6),
        peer_row("LitServe 0.2.19", 0.5, 1, not_served_by={}, p95_s=2.0),
        peer_row("lab ⑤ adaptive", 2.0, 1),  # the lab's paths come from bench.adaptive
        peer_row("Infinity 0.0.78", 5.0, 1, served_in_window=None),  # before the window was counted
        peer_row("LitServe 0.2.19", 2.0, 1, scenario="burst 12"),
    ]
    header = "Measured 2026-12-05 11:02–11:40 UTC on a host, every server pinned to core 1."
    report = tmp_path / "peer-x.json"
    report.write_text(json.dumps({"header": header, "capacity_per_s": 0.5, "rows": rows}), encoding="utf-8")
    peers = peer_points(report)
    assert (peers["date"], peers["time_utc"], peers["one_review_s"]) == ("2026-12-05", "11:02", 2.0)
    assert [(p["path"], p["label"], p["multiple"], p["runs"]) for p in peers["streams"]] == [
        ("infinity", "Infinity 0.0.78", 2.0, 3),
        ("litserve", "LitServe 0.2.19", 0.5, 1),
    ]
    infinity = peers["streams"][0]
    assert infinity["served_vs_capacity"] == 1.0  # 30 answers in 60 s at 0.5 a second
    assert infinity["served_work"] == 0.5 and infinity["p95_reviews"] == 14.5  # 29 s at 2 s a review
    assert (infinity["gave_up_share"], infinity["refused_share"]) == (0.4, 0.0)
    assert "Infinity 0.0.78" in tables(
        curve([stream_row("2026-12-05T10:00:00+00:00", 1, "adaptive", 2.0)], []) | {"peers": peers}
    )


def test_a_redraw_of_the_labs_paths_keeps_the_peers_the_figure_draws(tmp_path: Path) -> None:
    report = tmp_path / "peer-x.json"
    header = "Measured 2026-12-05 11:02 UTC."
    rows = [peer_row("LitServe 0.2.19", 2.0, 1)]
    report.write_text(json.dumps({"header": header, "capacity_per_s": 0.5, "rows": rows}), encoding="utf-8")
    streams, bursts, out = tmp_path / "s.jsonl", tmp_path / "b.jsonl", tmp_path / "c.json"
    streams.write_text(json.dumps(stream_row("2026-12-05T10:00:00+00:00", 1, "adaptive", 2.0)) + "\n", encoding="utf-8")
    assert "peers" not in write(streams, bursts, out)
    out.write_text(json.dumps({"peers": {"source": str(report)}}), encoding="utf-8")  # as a figure that drew them
    assert write(streams, bursts, out)["peers"]["streams"][0]["path"] == "litserve"  # kept, without --peers


def test_since_takes_every_run_from_then_on_with_their_bursts(tmp_path: Path) -> None:
    old, first, second = "2026-01-01T00:00:00+00:00", "2026-02-01T10:30:00+00:00", "2026-02-01T11:00:00+00:00"
    rows = [stream_row(old, 1, "adaptive", 0.5, served_vs_capacity=9.0)]
    rows += [stream_row(first, 1, "adaptive", 0.5), stream_row(second, 1, "adaptive", 2.0, served_vs_capacity=1.2)]
    streams, bursts, out = tmp_path / "s.jsonl", tmp_path / "b.jsonl", tmp_path / "c.json"
    streams.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    burst = {"host": HOST, "path": "adaptive", "burst": 12, "one_review_s": 1.0, "run": 1, "served": 3}
    burst |= {"first_answer_s": 0.5, "slowest_served_s": 2.0, "p99_refused_s": 0.02}
    bursts.write_text(json.dumps(burst | {"date": second}) + "\n", encoding="utf-8")
    data = write(streams, bursts, out, since=first)
    assert [(p["multiple"], p["served_vs_capacity"]) for p in data["streams"]] == [(0.5, 1.0), (2.0, 1.2)]
    assert len(data["bursts"]) == 1 and data["since"] == first and data["time_utc"] == "10:30"
    assert write(streams, bursts, out)["streams"][0]["multiple"] == 2.0  # without it: the newest run alone


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


def test_work_and_lengths_are_medians_late_answers_a_sum_and_a_long_mix_stands_apart() -> None:
    date = "2026-12-06T09:00:00+00:00"
    work = {"offered_mean_chars": 61.0, "offered_mean_tokens": 45.0, "cost_fit": {"samples": 27}, "long_chars": 2000}
    rows = [
        stream_row(
            date,
            run,
            "adaptive",
            5.0,
            **work,
            long_share=0.0,
            served_vs_capacity=1.5,
            served_work=w,
            served_mean_chars=c,
            served_mean_tokens=c * 0.7,
            late=late,
        )
        for run, w, c, late in ((1, 0.85, 38.0, 0), (2, 0.80, 40.0, 2), (3, 0.90, 36.0, None))
    ]
    rows += [
        stream_row(date, run, "adaptive", 5.0, **work, long_share=0.1, one_review_s=1.9, served_work=0.7)
        for run in (1, 2, 3)
    ]
    bursts = [
        {
            "date": date,
            "run": run,
            "path": "adaptive",
            "burst": 12,
            "long_share": share,
            "served": 7,
            "served_work_reviews": 5.5 + run,
            "first_answer_s": 0.5,
            "slowest_served_s": 6.0,
            "p99_refused_s": 0.02,
            "late": 1,
        }
        for run in (1, 2, 3)
        for share in (0.0, 0.1)
    ]
    data = curve(rows, bursts)
    (point,) = data["streams"]
    assert (data["long_share"], data["cost_fit_samples"], data["one_review_s"]) == (0.0, 27, 1.0)
    assert (point["served_vs_capacity"], point["served_work"]) == (1.5, 0.85)
    assert (point["served_mean_chars"], point["offered_mean_chars"], point["offered_mean_tokens"]) == (38.0, 61.0, 45.0)
    assert point["late"] == 2  # summed over the runs that counted: one late answer is a promise broken
    assert data["bursts"][0]["served_work_reviews"] == 7.5 and data["bursts"][0]["late"] == 3
    (long,) = data["long_mixes"]
    assert (long["long_share"], long["long_chars"], long["one_review_s"]) == (0.1, 2000, 1.9)
    assert long["streams"][0]["served_work"] == 0.7 and len(long["bursts"]) == 1
    text = tables(data)
    assert "| ⑤ adaptive | 5× | 1.50 | 0.85 | 38 / 61 |" in text
    assert "Reviews: 10% of the reviews 2,000 characters long; one review 1.900 s" in text


def test_rows_from_before_work_was_measured_give_points_without_it() -> None:
    data = curve([stream_row("2026-01-01T00:00:00+00:00", 1, "limited", 2.0)], [])
    (point,) = data["streams"]
    assert point["served_work"] is None and point["served_mean_chars"] is None and point["late"] is None
    assert (data["long_share"], data["cost_fit_samples"], data["long_mixes"]) == (0.0, None, [])
    assert "| ② limited | 2× | 1.00 | – | – |" in tables(data)


async def test_the_figure_is_in_the_adaptive_note_and_its_data_is_served(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        html = (await client.get("/")).text
        note = html[html.index('data-path-note="adaptive"') :]
        assert 'id="adaptive-curve"' in note[: note.index('</div>\n  <p class="note-429">')]
        assert (await client.get("/static/js/costcurve.js")).status_code == 200
        served = (await client.get("/static/adaptive-curve.json")).json()
    assert served == json.loads(CURVE.read_text(encoding="utf-8"))
