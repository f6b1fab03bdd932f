"""The load generator accounts for every request and reads the lab's hints correctly."""

import json
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager

from app.main import create_app
from app.settings import Settings
from kit.load import Fate, LoadConfig, LoadResult, TextSource, run_load, summarize, write_result
from tests.fakes import GatedScorer


async def load_in_process(config: LoadConfig, store: str = "memory://", **overrides: Any) -> LoadResult:
    app = create_app(Settings(warmup=False, job_store=store, **overrides), GatedScorer(gated=False))
    async with LifespanManager(app) as manager:
        return await run_load(config, transport=httpx.ASGITransport(app=manager.app))


async def test_every_fate_carries_the_review_it_sent() -> None:
    config = LoadConfig(url="http://lab", path="limited", mode="open", rate=100, duration_s=0.05, drain_s=30, seed=2)
    result = await load_in_process(config)
    source = TextSource(0, seed=2)
    assert sorted(o.text or "" for o in result.outcomes) == sorted(source.next() for _ in result.outcomes)


async def test_open_loop_follows_every_ticket_to_done(tmp_path: Path) -> None:
    config = LoadConfig(url="http://lab", path="tickets", mode="open", rate=400, duration_s=0.05, drain_s=30)
    result = await load_in_process(config, store=f"sqlite:///{tmp_path / 'jobs.db'}")
    summary = write_result(result, tmp_path / "tickets")
    assert summary["sent"] == 20 and summary["counts"] == {"ok": 20} and summary["unexplained"] == 0
    assert summary["eta"]["tickets"] == 20
    assert all(o.actual_s is not None for o in result.outcomes)
    assert (tmp_path / "tickets.json").exists() and (tmp_path / "tickets.png").stat().st_size > 0


async def test_closed_loop_counts_rejections_and_obeys_retry_after() -> None:
    config = LoadConfig(url="http://lab", path="limited", mode="closed", concurrency=4, duration_s=0.05, drain_s=30)
    result = await load_in_process(config, limited_seats=0)
    summary = summarize(result)
    assert summary["unexplained"] == 0
    assert set(summary["counts"]) <= {"ok", "rejected_429"}
    assert sum(summary["counts"].values()) == summary["sent"] == len(result.outcomes)
    assert all(o.retry_after_s is not None and o.retry_after_s >= 1 for o in result.outcomes if o.status == 429)


def test_summary_measures_capacity_hints_and_comebacks() -> None:
    config = LoadConfig(url="http://lab", path="batched", mode="open", rate=10, duration_s=10)
    outcomes = [
        Fate(0.0, 2.0, "ok", 200, infer_ms=2000, batch_size=2),
        Fate(0.0, 2.0, "ok", 200, infer_ms=2000, batch_size=2),
        Fate(0.5, 0.01, "rejected_429", 429, retry_after_s=3),
        Fate(3.5, 20.0, "ok", 200, retry=True, infer_ms=1000, batch_size=1),  # answered after the window
        Fate(1.0, 0.02, "rejected_503", 503, retry=True),
    ]
    summary = summarize(LoadResult(config, "now", outcomes))
    assert summary["counts"] == {"ok": 3, "rejected_429": 1, "rejected_503": 1}
    assert summary["lane_capacity_per_s"] == 1.0  # each review cost one lane-second
    assert summary["useful_per_s"] == 0.2  # two answers inside the 10 s window
    assert summary["useful_lane_share"] == 0.2  # one shared 2 s batch inside the window; the late one is outside
    assert summary["comeback"] == {
        "retries": 2,
        "got_a_seat": 0.5,
        "came_with_a_hold": 0,
        "hold_results": {},
        "walk_ins": 3,
        "walk_ins_refused": round(1 / 3, 3),
        "seated_at_most": 1.0,  # three answers for three first tries
    }
    assert summary["offered_vs_capacity"] == 0.3  # three first tries in 10 s, one review a lane-second
    assert summary["rejection_latency_s"]["max"] == 0.02
    assert summary["mean_batch"] == 1.67


def test_summary_bounds_what_any_seat_policy_could_do() -> None:
    """Four first tries, two answers in all: at most half the returners could be seated on their first return."""
    config = LoadConfig(url="http://lab", path="limited", mode="open", rate=2, duration_s=2)
    outcomes = [
        Fate(0.0, 1.0, "ok", 200, infer_ms=1000),
        Fate(0.5, 0.01, "rejected_429", 429, retry_after_s=1),
        Fate(1.0, 0.01, "rejected_429", 429, retry_after_s=1),
        Fate(1.5, 0.01, "rejected_429", 429, retry_after_s=1),
        Fate(1.5, 1.5, "ok", 200, retry=True, infer_ms=1000),
        Fate(2.0, 0.01, "rejected_429", 429, retry=True),
        Fate(2.5, 0.01, "rejected_429", 429, retry=True),
    ]
    back = summarize(LoadResult(config, "now", outcomes))["comeback"]
    assert back["got_a_seat"] == round(1 / 3, 3)
    assert back["seated_at_most"] == 0.5
    assert summarize(LoadResult(config, "now", outcomes))["offered_vs_capacity"] == 2.0


def test_a_long_mix_mixes_long_reviews_at_its_share_and_leaves_the_short_ones_as_they_were() -> None:
    plain = TextSource(0, seed=3)
    source = TextSource(0, seed=3, long_share=0.1, long_chars=2000)
    texts = [source.next() for _ in range(1000)]
    long = [t for t in texts if len(t) > 300]
    assert 70 <= len(long) <= 130 and {len(t) for t in long} == {2000}  # under the lab's 2,000-character limit
    assert len(set(texts)) == 1000  # unique, so the lab's cache never answers

    def untagged(text: str) -> str:
        return text.rsplit(" #", 1)[0]

    shorts = [untagged(t) for t in texts if len(t) <= 300]
    assert shorts == [untagged(plain.next()) for _ in shorts]  # the same short reviews, long ones in between
    again = TextSource(0, seed=3, long_share=0.1, long_chars=2000)
    assert [again.next() for _ in range(1000)] == texts  # deterministic by seed
    samples = [str(s["text"]) for s in json.loads(Settings().samples_file.read_text(encoding="utf-8"))]
    assert any(long[0].startswith(sample + " ") for sample in samples)  # sample reviews joined, not padding
