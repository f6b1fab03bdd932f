"""The peer benchmark gives both servers the same work, and judges the issue's targets on the medians of its runs."""

import itertools
from dataclasses import replace

from bench.peer import WINDOW_S, last_busy, scenarios
from bench.peer_report import (
    INFINITY,
    LAB,
    LAB_LIMITED,
    ONE_AT_A_TIME,
    PEER,
    Row,
    Spread,
    Summary,
    all_pairs,
    check_targets,
    markdown,
    paired,
    row_of,
    summarize,
)
from kit.load import Fate, LoadConfig, LoadResult, TextSource
from kit.work import CostFit, LaneCost, Lengths, WorkMeter


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


def test_a_long_mix_reaches_every_peer_scenario() -> None:
    plans = scenarios(capacity=1.0, duration_s=60.0, seed=5, long_share=0.1, long_chars=1800)
    assert {(config.long_share, config.long_chars) for config in plans.values()} == {(0.1, 1800)}
    assert {config.long_share for config in scenarios(capacity=1.0, duration_s=60.0).values()} == {0.0}


def test_the_streams_adaptive_admission_is_judged_on_are_poisson_with_30_s_timeouts() -> None:
    plans = scenarios(capacity=0.5, duration_s=60.0)
    streams = {name: config for name, config in plans.items() if "Poisson" in name}
    assert sorted(config.rate for config in streams.values()) == [0.25, 1.0, 2.5]
    assert all(config.poisson and config.timeout_s == 30.0 for config in streams.values())
    assert [name.split(" (")[0] for name in streams] == ["open 2× Poisson", "open 0.5× Poisson", "open 5× Poisson"]


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


def test_with_a_client_timeout_served_per_second_counts_over_the_same_window_for_every_server() -> None:
    """Due over 60 s, a 30 s timeout: any answer counts until 90 s, so a server that answers nobody in time after
    50 s is not rated over 50 s (it would look as fast as one that kept serving until the window ended)."""
    config = LoadConfig(url="", path="", mode="open", rate=1.0, duration_s=60.0, timeout_s=30.0)
    gave_up = [Fate(float(d), 1.0, "ok", 200) for d in range(0, 50)] + [
        Fate(float(d), 30.0, "client_timeout") for d in range(50, 60)
    ]
    kept_on = [Fate(float(d), 29.0, "ok", 200) for d in range(0, 60)]
    early = row_of(INFINITY, "open 2×", 1, LoadResult(config, "", gave_up), [], 0)
    late = row_of(LAB, "open 2×", 1, LoadResult(config, "", kept_on), [], 0)
    assert early.served_per_s == round(50 / 89.0, 3)  # the last request was due at 59 s
    assert late.served_per_s == round(60 / 89.0, 3)


def meter() -> WorkMeter:
    """A review costs 0.01 s a character (no tokenizer here); the mix's mean review 0.5 s."""
    return WorkMeter(Lengths(None), LaneCost(CostFit("chars", 0.0, 0.01, 0.0, 3, 0.0), 0.5, 0.5))


def test_served_work_is_weighed_over_the_same_window_as_served_per_second() -> None:
    """Due over 10 s, a 30 s timeout: served/s and served work both run to 39 s (the last due plus the timeout)."""
    config = LoadConfig(url="", path="", mode="open", rate=1.0, duration_s=10.0, timeout_s=30.0)
    outcomes = [
        Fate(0.0, 1.0, "ok", 200, text="a" * 39),  # 0.39 s of the lane's work
        Fate(4.0, 2.0, "ok", 200, text="b" * 117),  # 1.17 s
        Fate(9.0, 30.0, "client_timeout", text="c" * 2000),  # offered, never served
    ]
    row = row_of(INFINITY, "open 2×", 1, LoadResult(config, "", outcomes), [], 0, meter=meter())
    assert row.served_per_s == round(2 / 39.0, 3)
    assert row.served_work == round((0.39 + 1.17) / 39.0, 3)
    assert (row.served_mean_chars, row.offered_mean_chars) == (78.0, 718.7)
    assert row.served_mean_tokens is None and row.offered_mean_tokens is None  # characters only here
    unweighed = row_of(INFINITY, "open 2×", 1, LoadResult(config, "", outcomes), [], 0)
    assert unweighed.served_work is None and unweighed.served_mean_chars is None  # no measured cost: no work
    (only,) = summarize([row])
    assert only.served_work == Spread(0.04, 0.04, 0.04) and only.served_mean_chars == Spread(78.0, 78.0, 78.0)
    table = markdown([row], [only], [], [])
    assert "| served/s | served work | served chars (offered) |" in table
    assert f"| {row.served_per_s:.3f} | 0.04 | 78.0 (718.7) |" in table


def test_a_streams_work_within_its_sending_window_is_counted_as_bench_adaptive_counts_the_labs_paths() -> None:
    """The page's cost curve puts the peers beside ②③⑤: the answers delivered by the window's end (10 s here),
    a peer's answer after it counting nothing (a peer says nothing of when its inference ran)."""
    config = LoadConfig(url="", path="", mode="open", rate=1.0, duration_s=10.0, timeout_s=30.0)
    outcomes = [
        Fate(0.0, 1.0, "ok", 200, text="a" * 39),  # done at 1 s: 0.39 s of the lane's work
        Fate(4.0, 2.0, "ok", 200, text="b" * 117),  # done at 6 s: 1.17 s
        Fate(9.0, 3.0, "ok", 200, text="c" * 50),  # done at 12 s, after the window
        Fate(9.5, 3.0, "ok", 200, infer_ms=2500, text="d" * 50),  # after it too, a fifth of its inference inside
    ]
    row = row_of(INFINITY, "open 2×", 1, LoadResult(config, "", outcomes), [], 0, meter=meter())
    assert row.served_in_window == 2
    assert row.served_work_in_window == round((0.39 + 1.17) / 10.0, 3)
    burst = LoadConfig(url="", path="", mode="open", burst=12, duration_s=1.0, timeout_s=30.0)
    assert (
        row_of(INFINITY, "burst 12", 1, LoadResult(burst, "", outcomes), [], 0, meter=meter()).served_in_window is None
    )


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


def test_a_poisson_schedule_is_seeded_and_keeps_its_rate() -> None:
    from kit.load import Runner

    def due(seed: int) -> list[float]:
        config = LoadConfig(url="", path="", mode="open", rate=2.0, duration_s=600.0, seed=seed, poisson=True)
        return Runner(config, None).schedule()  # type: ignore[arg-type]  # schedule() never touches the client

    first = due(3)
    assert first == due(3) != due(4)
    assert 1100 < len(first) < 1300  # 2/s for 600 s
    gaps = [b - a for a, b in itertools.pairwise(first)]
    assert min(gaps) < 0.05 and max(gaps) > 2.0  # exponential, not even spacing


def one_at_a_time_row(server: str, run: int, latencies: list[float]) -> Row:
    outcomes = [Fate(float(i), t, "ok", 200) for i, t in enumerate(latencies)]
    result = LoadResult(LoadConfig(url="", path="", mode="closed"), "", outcomes)
    return row_of(server, f"{ONE_AT_A_TIME} (3 reviews)", run, result, [], 0)


def test_one_review_at_a_time_is_judged_text_by_text_against_infinity_with_the_window_off_for_batched() -> None:
    rows = [
        one_at_a_time_row(LAB_LIMITED, 1, [0.9, 1.8, 0.45]),
        one_at_a_time_row(LAB, 1, [1.02, 2.02, 0.52]),
        one_at_a_time_row(INFINITY, 1, [1.0, 2.0, 0.5]),
    ]
    pairs = all_pairs(rows)
    limited = next(p for p in pairs if p.lab == LAB_LIMITED)
    batched = next(p for p in pairs if p.lab == LAB and p.peer == INFINITY)
    assert limited.ratio == 0.9
    assert batched.ratio == 1.02 and batched.ratio_less_window is not None and batched.ratio_less_window < 1.0
    verdicts = {c.target: c.met for c in check_targets(summarize(rows), pairs)}
    assert verdicts[f"one at a time: {LAB_LIMITED} ÷ Infinity ≤ 1.00 paired per text"] is True
    assert verdicts[f"one at a time: {LAB} ÷ Infinity ≤ 1.00 paired per text (less its 25 ms window)"] is True
    assert verdicts["2× Poisson, 30 s timeout: served/s ≥ Infinity's"] is None  # not run


def test_infinity_targets_ask_for_as_many_served_less_memory_and_a_quick_stop() -> None:
    def both(scenario: str, lab: Summary, peer: Summary) -> list[Summary]:
        return [replace(lab, scenario=scenario, server=LAB), replace(peer, scenario=scenario, server=INFINITY)]

    lab = replace(summary(LAB, ""), busy_after_s=Spread(1.2, 0.5, 1.5), peak_rss_mb=Spread(650, 650, 650))
    peer = replace(summary(INFINITY, ""), busy_after_s=Spread(45.0, 38, 60), peak_rss_mb=Spread(850, 850, 850))
    slower = replace(lab, served_per_s=Spread(0.99, 0.99, 0.99))
    summaries = both("open 2× Poisson", slower, peer) + both("burst 12", lab, peer)
    verdicts = {c.target: c.met for c in check_targets(summaries)}
    assert verdicts["2× Poisson, 30 s timeout: served/s ≥ Infinity's"] is False  # 1 % fewer is fewer
    assert verdicts["burst 12: served/s ≥ Infinity's, p95 ≤ Infinity's + 5 %"] is True
    assert verdicts["stops working ≤ 2 s after the last client leaves"] is True
    assert verdicts["peak memory ≤ 0.8× Infinity's"] is True  # 650 / 850 = 0.76


def ticks(seconds: float, every_s: float, cpu_per_s: float, tick_s: float = 0.01) -> list[tuple[float, float]]:
    """Samples every `every_s` of a process using `cpu_per_s`, its CPU time counted in whole clock ticks."""
    n = round(seconds / every_s)
    return [(i * every_s, (int(i * every_s * cpu_per_s / tick_s)) * tick_s) for i in range(n + 1)]


def test_an_idle_servers_clock_ticks_do_not_count_as_work() -> None:
    idle = ticks(10.0, 0.05, cpu_per_s=0.01)  # 1 % of a core: one 10 ms tick a second
    assert any((c1 - c0) / (t1 - t0) > 0.10 for (t0, c0), (t1, c1) in itertools.pairwise(idle))  # pairs would say busy
    assert last_busy(idle, since=0.0) == 0.0


def test_work_counts_until_it_stops() -> None:
    working = ticks(4.0, 0.05, cpu_per_s=1.0)
    t_end, c_end = working[-1]
    quiet = [(t_end + t, c_end + c) for t, c in ticks(6.0, 0.05, cpu_per_s=0.01)[1:]]
    busy = last_busy(working + quiet, since=1.0)
    assert t_end <= busy <= t_end + WINDOW_S  # within one window of the moment it stopped
