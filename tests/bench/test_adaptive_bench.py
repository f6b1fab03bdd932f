"""The ⑤ benchmark's table: one line per measured row, ratios to the capacity measured in the same run."""

from bench.adaptive import table


def test_the_table_shows_each_row_against_its_capacity_and_one_review() -> None:
    row = {
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
    quiet = row | {"path": "limited", "multiple": 0.5, "p99_refused_s": None, "counts": {"ok": 40}}
    lines = table([row, quiet]).splitlines()
    assert lines[2] == "| ⑤ adaptive | 2× (2.72/s) | 1 | 1.30 | 0.96 | 2.10 | 2.9 | 0.012 | ok 78 rejected_429 85 |"
    assert lines[3].startswith("| ② limited | 0.5× (2.72/s) |") and "| – |" in lines[3]
