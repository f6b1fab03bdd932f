"""The overload report renders what was measured, and a partial rerun keeps the other rows."""

import json
from pathlib import Path
from typing import Any

from bench.overload import merged_with_earlier, render


def row(name: str, group: str, **summary: Any) -> dict[str, Any]:
    base = {
        "sent": 3,
        "counts": {"ok": 2, "rejected_429": 1},
        "unexplained": 0,
        "ok_latency_s": {"p50": 1.0, "p99": 2.0},
        "rejection_latency_s": {"p50": 0.01, "p99": 0.02},
        "useful_per_s": 0.9,
        "lane_capacity_per_s": 1.0,
        "useful_vs_capacity": 0.9,
        "useful_lane_share": 0.97,
    }
    return {
        "name": name,
        "group": group,
        "path": "limited",
        "what": "a test",
        "rate_per_s": 10.0,
        "date": "2026-11-29 08:00 UTC",
        "summary": base | summary,
        "cgroup_peak_mib": 512.0,
        "anon_peak_mib": 480.0,
        "rss_peak_mib": 500.0,
        "cap_mib": 1228.8,
        "oom_kills": 1 if group == "memory" else 0,
        "server_alive_after": group != "memory",
        "server_exit_code": -9 if group == "memory" else -15,
        "cpu_cores_used": {"server": 1.0, "load_generator": 0.1, "others": 0.5},
        "loadavg_after": [1.5, 1.0, 0.5],
    }


def test_render_shows_kills_ratios_and_hints() -> None:
    rows = [
        row("naive-12", "memory"),
        row("limited-10x", "overload"),
        row("limited-2x-retry", "hints", comeback={"retries": 4, "got_a_seat": 0.25}),
    ]
    text = render(rows, {"date": "today", "machine": "2 cores", "model": "twin", "sharing": "Busy box."})
    assert "| 1 | DEAD (exit -9) |" in text
    assert "| 0.90 | 0.97 |" in text
    assert "25.0 % of 4 clients" in text
    assert "Busy box." in text


def test_render_says_what_any_seat_policy_could_have_done() -> None:
    back = {"retries": 168, "got_a_seat": 0.375, "seated_at_most": 0.435}
    text = render(
        [row("limited-2x60-retry", "hints", comeback=back, offered_vs_capacity=2.66)],
        {"date": "today", "machine": "2 cores", "model": "twin", "sharing": ""},
    )
    assert "37.5 % of 168 clients" in text
    assert "at most 43.5 % could have been, offered 2.66x the capacity the lane held" in text


def test_partial_rerun_replaces_its_rows_and_keeps_the_others(tmp_path: Path) -> None:
    saved = tmp_path / "overload.json"
    saved.write_text(json.dumps({"meta": {}, "rows": [row("naive-12", "memory"), row("limited-10x", "overload")]}))
    fresh = row("naive-12", "memory", sent=99)
    merged = merged_with_earlier(saved, [fresh])
    assert [r["name"] for r in merged] == ["naive-12", "limited-10x"]
    assert merged[0]["summary"]["sent"] == 99
