"""Served work: a review's one-at-a-time cost fitted on its tokens, summed over the served, beside the count."""

import math
from pathlib import Path

import pytest

from kit.work import (
    CostFit,
    LaneCost,
    Length,
    Lengths,
    WorkMeter,
    fit_cost,
    mean_length,
    mix_sample,
    mixed,
    served_work,
)

TINY = Path(__file__).parents[1] / "assets" / "tiny-reranker"


def curve_s(tokens: int) -> float:
    """The twin's shape on 2026-12-05's host: 21 tokens 0.35 s, 63 tokens 0.99 s, 512 tokens 11.0 s."""
    return 0.05 + 0.014 * tokens + 1.45e-5 * tokens * tokens


def test_the_fit_finds_attentions_square_from_reviews_measured_one_at_a_time() -> None:
    measured = [(Length(2 * t, t), curve_s(t)) for t in (21, 24, 31, 40, 46, 63, 127, 512, 512)]
    fit = fit_cost(measured)
    assert fit.unit == "tokens" and fit.samples == 9
    assert fit.worst_error < 0.001
    assert math.isclose(fit.seconds(Length(0, 300)), curve_s(300), rel_tol=1e-3)  # between the two clusters too
    assert fit.seconds(Length(5000, 512)) == pytest.approx(curve_s(512), rel=1e-3)  # the lane stops at 512 tokens


def test_short_reviews_keep_their_cost_beside_long_ones() -> None:
    """Fitted for relative error: the many short reviews are not sacrificed to the few 10 s ones."""
    noisy = [(Length(0, t), curve_s(t) * (1.05 if t == 512 else 1.0)) for t in (21, 24, 31, 40, 46, 63, 512, 512)]
    fit = fit_cost(noisy)
    assert fit.seconds(Length(0, 21)) == pytest.approx(curve_s(21), rel=0.05)


def test_without_a_tokenizer_the_fit_reads_characters() -> None:
    fit = fit_cost([(Length(c, None), 0.1 + 0.01 * c) for c in (10, 50, 200)])
    assert fit.unit == "chars"
    assert fit.seconds(Length(100, 999)) == pytest.approx(1.1, rel=1e-6)  # its tokens are not what it was fitted on


def test_the_fit_falls_back_to_a_line_then_to_the_mean() -> None:
    line = fit_cost([(Length(0, 10), 1.0), (Length(0, 20), 2.0), (Length(0, 10), 1.0)])  # two lengths: no square
    assert line.c_s == 0 and line.seconds(Length(0, 30)) == pytest.approx(3.0)
    same = fit_cost([(Length(0, 10), 1.0), (Length(0, 10), 2.0)])  # one length: its mean
    assert (same.a_s, same.b_s, same.c_s) == (1.5, 0.0, 0.0) and same.worst_error == 0.5
    falling = fit_cost([(Length(0, 10), 3.0), (Length(0, 20), 2.0), (Length(0, 30), 1.0)])  # never cheaper for longer
    assert (falling.b_s, falling.c_s) == (0.0, 0.0) and falling.a_s == pytest.approx(2.0)
    with pytest.raises(ValueError, match="nothing to fit"):
        fit_cost([(Length(0, 10), 0.0)])


def test_capacity_is_one_over_the_mean_cost_over_the_mix_offered_not_over_the_reviews_measured() -> None:
    measured = [(Length(0, t), 0.01 * t) for t in (100, 100, 100, 10)]  # mostly long reviews measured
    cost = LaneCost.of(measured, [Length(0, 10)] * 3 + [Length(0, 100)])  # mostly short reviews offered
    assert cost.measured_mean_s == pytest.approx(0.775)
    assert cost.one_review_s == pytest.approx(0.325)
    assert cost.capacity_per_s == pytest.approx(1 / 0.325)


def linear(per_token_s: float) -> CostFit:
    return CostFit("tokens", 0.0, per_token_s, 0.0, 4, 0.0)


def test_served_work_weighs_each_answer_by_its_own_cost() -> None:
    """Two short reviews served of two short and two long offered, in 1 s: 2 answers, 0.2 s of the lane's work."""
    offered = [Length(10, 10), Length(10, 10), Length(100, 100), Length(100, 100)]
    cost = LaneCost(linear(0.01), one_review_s=0.55, measured_mean_s=0.55)
    row = served_work(offered, offered[:2], 1.0, cost)
    assert row["served_work"] == 0.2  # 2 answers a second would read 2 × 0.55 = 1.1 of capacity by count
    assert row["offered_work"] == 2.2
    assert row["served_work_reviews"] == round(0.2 / 0.55, 2)
    assert (row["offered_mean_chars"], row["served_mean_chars"]) == (55.0, 10.0)
    assert (row["offered_mean_tokens"], row["served_mean_tokens"]) == (55.0, 10.0)
    assert served_work(offered, [], 0.0, cost)["served_work"] is None  # a burst: no window, work in reviews only
    cut = served_work(offered, offered[:2], 1.0, cost, straddling=[(Length(100, 100), 0.25)])
    assert cut["served_work"] == 0.2 and cut["served_work_straddling"] == 0.25  # a quarter of a 1 s review


def test_serving_the_mix_offered_the_work_is_the_count_against_capacity() -> None:
    offered = [Length(0, t) for t in (10, 20, 30, 40)]
    cost = LaneCost.of([(x, 0.02 * (x.tokens or 0)) for x in offered], offered)
    nothing = WorkMeter(Lengths(None), cost).row([], [], 1.0)  # from texts: nothing served is no work, no length
    assert nothing["served_work"] == 0.0 and nothing["served_mean_chars"] is None
    window = 10.0
    row = served_work(offered, offered * 2, window, cost)
    served_vs_capacity = len(offered * 2) / window / cost.capacity_per_s
    assert row["served_work"] == pytest.approx(served_vs_capacity, abs=1e-3)


def test_lengths_count_the_pair_the_lane_runs_and_stop_where_it_truncates() -> None:
    lengths = Lengths(TINY, max_tokens=64)
    assert lengths.unit == "tokens"
    short, long = lengths.of(["빵이 맛있어요!", "빵이 정말 맛있어요. " * 200])
    assert short.chars == 8 and short.tokens is not None and short.tokens > 3  # the topic's tokens come with it
    assert long.tokens == 64
    blind = Lengths(None)
    assert blind.unit == "chars" and blind.of(["빵"]) == [Length(1, None)]
    assert mean_length([Length(10, 4), Length(20, None)]) == {"chars": 15.0, "tokens": None}
    assert mean_length([]) == {"chars": None, "tokens": None}


def test_a_sample_of_the_mix_has_its_exact_proportions() -> None:
    sample = mix_sample(seed=1, long_share=0.1, long_chars=1500, count=200)
    assert len(sample) == 200 and sum(len(t) == 1500 for t in sample) == 20
    measured = mixed(seed=1, shorts=24, longs=3, long_chars=2000)
    assert len(measured) == 27 and [i for i, t in enumerate(measured) if len(t) == 2000] == [4, 13, 22]
    assert mixed(seed=1, shorts=24, longs=0, long_chars=2000) == [t for t in measured if len(t) < 2000]
    assert mix_sample(seed=1, long_share=0.0, long_chars=2000, count=5) == mixed(1, 5, 0, 2000)
