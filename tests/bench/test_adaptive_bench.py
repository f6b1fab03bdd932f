"""The ⑤ benchmark's rows: counts and work against the capacity measured in the same run, lengths, late answers."""

from typing import Any

from bench.adaptive import burst_numbers, stream_numbers, table
from kit.load import Fate, LoadConfig, LoadResult
from kit.work import CostFit, LaneCost, Lengths, WorkMeter

OLD_ROW = {
    "path": "adaptive",
    "multiple": 2.0,
    "rate_per_s": 2.72,
    "run": 1,
    "served_per_s": 1.3,
    "served_vs_capacity": 0.956,
    "p95_served_s": 2.1,
    "one_review_s": 0.735,
    "p99_refused_s": 0.012,
    "counts": {"ok": 78, "rejected_429": 85},
}


def test_the_table_shows_each_row_against_its_capacity_and_one_review() -> None:
    new = OLD_ROW | {
        "long_share": 0.1,
        "served_work": 0.874,
        "served_mean_chars": 47.2,
        "offered_mean_chars": 61.5,
        "served_mean_tokens": 38.0,
        "offered_mean_tokens": 45.1,
        "late": 0,
    }
    quiet = OLD_ROW | {"path": "limited", "multiple": 0.5, "p99_refused_s": None, "counts": {"ok": 40}}
    lines = table([new, quiet]).splitlines()
    assert lines[2] == (
        "| ⑤ adaptive | 10% | 2× (2.72/s) | 1 | 1.30 | 0.96 | 0.87 | 47 / 62 | 38 / 45 | 2.10 | 2.9 | 0.012 | 0 "
        "| ok 78 rejected_429 85 |"
    )
    # A row from before issue 45 (no work, lengths, mix or late) still reads, with dashes.
    assert (
        lines[3]
        == "| ② limited | – | 0.5× (2.72/s) | 1 | 1.30 | 0.96 | – | – / – | – / – | 2.10 | 2.9 | – | – | ok 40 |"
    )


def meter() -> WorkMeter:
    """A review costs 0.01 s a character (no tokenizer in these tests); the mix's mean review 0.5 s."""
    return WorkMeter(Lengths(None), LaneCost(CostFit("chars", 0.0, 0.01, 0.0, 3, 0.0), 0.5, 0.5))


def stats(late: int | None) -> dict[str, Any]:
    details: dict[str, Any] = {"in_flight": 0, "waiting": 0, "limit": 2, "standing": 0, "newest_first": 3}
    if late is not None:
        details["late"] = late
    return {"stats": {"paths": {"adaptive": details, "limited": {"in_flight": 0, "waiting": 0}}}}


def test_a_stream_row_weighs_the_answers_in_its_window_and_reads_late_answers_from_the_server() -> None:
    config = LoadConfig(url="", path="", mode="open", rate=1.0, duration_s=10.0, timeout_s=30.0)
    outcomes = [
        Fate(0.0, 1.0, "ok", 200, infer_ms=900, text="a" * 20),  # 0.2 s of work, answered in the window
        Fate(1.0, 2.0, "ok", 200, infer_ms=900, text="b" * 40),  # 0.4 s
        Fate(2.0, 0.01, "rejected_429", 429, text="c" * 300),  # refused: offered, not served
        Fate(9.0, 3.0, "ok", 200, infer_ms=2500, text="d" * 60),  # answered after the window: not counted,
        Fate(9.5, 3.0, "ok", 200, infer_ms=900, text="e" * 90),  # but a fifth of that one ran inside it
    ]
    row = stream_numbers("adaptive", LoadResult(config, "", outcomes, server_after=stats(late=1)), meter())
    assert row["served_per_s"] == 0.2
    assert row["served_work"] == 0.06  # (0.2 + 0.4) s of the lane's work in 10 s
    assert row["served_work_straddling"] == 0.012  # 0.6 s × (10 − 9.5) / 2.5, in 10 s; the last ran after 10 s
    assert row["offered_work"] == 0.51
    assert (row["served_mean_chars"], row["offered_mean_chars"]) == (30.0, 102.0)
    assert row["served_mean_tokens"] is None  # no tokenizer: characters only
    assert row["late"] == 1
    assert row["adaptive"]["newest_first"] == 3
    assert (
        stream_numbers("adaptive", LoadResult(config, "", outcomes, server_after=stats(None)), meter())["late"] is None
    )
    assert stream_numbers("limited", LoadResult(config, "", outcomes, server_after=stats(4)), meter())["late"] is None
    assert stream_numbers("adaptive", LoadResult(config, "", outcomes), meter())["late"] is None  # no stats at all


def test_a_burst_row_counts_its_work_in_reviews_of_the_mix() -> None:
    config = LoadConfig(url="", path="", mode="open", burst=3, every_s=1e9, duration_s=1.0)
    outcomes = [
        Fate(0.0, 1.0, "ok", 200, text="a" * 25),
        Fate(0.0, 2.5, "ok", 200, text="b" * 75),
        Fate(0.0, 0.02, "rejected_429", 429, text="c" * 2000),
    ]
    row = burst_numbers("adaptive", LoadResult(config, "", outcomes, server_after=stats(late=0)), meter())
    assert (row["served"], row["served_work_reviews"]) == (2, 2.0)  # 1 s of work, reviews of 0.5 s
    assert (row["served_mean_chars"], row["offered_mean_chars"]) == (50.0, 700.0)
    assert (row["first_answer_s"], row["slowest_served_s"], row["late"]) == (1.0, 2.5, 0)
    assert "served_work" not in row  # a burst has no window to spread it over
