"""The peer benchmark gives both servers the same work, and judges the issue's targets on the medians of its runs."""

from app.bench.load import Fate, LoadConfig, LoadResult, TextSource
from app.bench.peer import scenarios
from app.bench.peer_report import LAB, PEER, Row, Spread, Summary, check_targets, paired, row_of, summarize


def test_a_seed_gives_the_same_reviews_in_the_same_order() -> None:
    first, second = TextSource(0, seed=7), TextSource(0, seed=7)
    texts = [first.next() for _ in range(50)]
    assert texts == [second.next() for _ in range(50)]
    assert len(set(texts)) == 50  # still unique, so the lab's cache never answers


def test_another_seed_gives_other_reviews() -> None:
    one, two = TextSource(0, seed=1), TextSource(0, seed=2)
    assert [one.next() for _ in range(12)] != [two.next() for _ in range(12)]


def test_every_peer_scenario_carries_the_seed() -> None:
    plans = scenarios(capacity=1.0, duration_s=60.0, seed=5)
    assert set(plans) >= {"burst 12", "burst 50"}
    assert {config.seed for config in plans.values()} == {5}


def load_result(finished_at: list[float], batch_sizes: list[int] | None = None) -> LoadResult:
    """Requests all due at 0 that answered at `finished_at` seconds."""
    sizes = batch_sizes or [1] * len(finished_at)
    outcomes = [Fate(0.0, t, "ok", 200, batch_size=n) for t, n in zip(finished_at, sizes, strict=True)]
    return LoadResult(LoadConfig(url="", path="", mode="open", burst=len(outcomes)), "", outcomes)


def summary(server: str, scenario: str, *, batch: float = 8.0, rate: float = 1.0, p50: float = 1.0) -> Summary:
    def one(value: float) -> Spread:
        return Spread(value, value, value)

    return Summary(
        scenario, server, 3, 0, one(batch), one(rate), one(p50), one(p50 * 2), one(700 if server == LAB else 800)
    )


def test_served_per_second_runs_to_the_last_answer_not_to_the_end_of_the_window() -> None:
    row = row_of(LAB, "open 2×", 1, load_result([5.0, 10.0, 61.0, 70.0]), [], 0)
    assert row.served_per_s == round(4 / 70.0, 3)


def test_mean_batch_is_per_request_from_the_headers_or_from_the_peer_log() -> None:
    lab = row_of(LAB, "burst 12", 1, load_result([1.0] * 9, [8] * 8 + [1]), [], 0)
    peer = row_of(PEER, "burst 12", 1, load_result([1.0] * 9), [8, 1], 0)
    assert lab.mean_batch == peer.mean_batch == round((8 * 8 + 1) / 9, 2)


def test_the_summary_is_the_median_of_the_runs_with_their_range() -> None:
    rows = [row_of(LAB, "burst 12", run, load_result([t]), [], 0) for run, t in enumerate((1.0, 4.0, 2.0), start=1)]
    (only,) = summarize(rows)
    assert only.runs == 3
    assert only.p50_s == Spread(2.0, 1.0, 4.0)


def test_targets_are_judged_on_the_medians() -> None:
    summaries = [
        summary(LAB, "open 2× (2.4/s, 60 s)", batch=7.0, rate=0.96),
        summary(PEER, "open 2× (2.4/s, 60 s)", batch=8.0, rate=1.0),
        summary(LAB, "open 0.8× (1.0/s, 60 s)", p50=1.04),
        summary(PEER, "open 0.8× (1.0/s, 60 s)", p50=1.0),
    ]
    verdicts = {c.target: c.met for c in check_targets(summaries)}
    assert verdicts["2×: mean batch ≥ 0.9 × LitServe's"] is False  # 7/8 = 0.875
    assert verdicts["2×: served/s ≥ LitServe's − 5 %"] is True  # −4 %
    assert verdicts["0.8×: p50 ≤ LitServe's + 30 ms"] is False  # +40 ms
    assert verdicts["burst 12: served/s and p95 within 5 % or better"] is None  # not run
    assert verdicts["peak memory lower, every scenario"] is True


def test_pairs_match_each_request_with_its_twin_in_the_same_run_and_skip_the_unserved() -> None:
    def row(server: str, run: int, latencies: list[float | None]) -> Row:
        outcomes = [
            Fate(float(i), t or 0.0, "ok" if t is not None else "client_timeout") for i, t in enumerate(latencies)
        ]
        result = LoadResult(LoadConfig(url="", path="", mode="open", rate=1.0), "", outcomes)
        return row_of(server, "open 0.8×", run, result, [1] * len(outcomes), 0)

    rows = [
        row(LAB, 1, [1.0, 2.0, 3.0, None]),
        row(PEER, 1, [0.5, 2.0, 2.0, 4.0]),
        row(PEER, 2, [9.0, 9.0, 9.0, 9.0]),  # no ③ run 2 to pair with
    ]
    (only,) = paired(rows)
    assert only.pairs == 3
    assert only.median_s == 0.5
