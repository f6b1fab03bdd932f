"""The length-aware cost model: fitted from observations, trusted only when it can tell long from short."""

import pytest

from app.engine.clock import ServiceClock
from app.engine.cost import LengthCost, TokenCost, rising_curve


def feed(cost: LengthCost | ServiceClock, per_review_s: float, per_char_s: float, sizes: list[int]) -> None:
    for chars in sizes:
        cost.observe(per_review_s + per_char_s * chars, 1, chars)


def test_fit_recovers_a_linear_cost_from_single_reviews() -> None:
    cost = LengthCost()
    feed(cost, 0.3, 0.01, [10, 50, 100, 200, 400])
    assert cost.fit is not None
    assert cost.fit.per_review_s == pytest.approx(0.3)
    assert cost.fit.per_char_s == pytest.approx(0.01)
    assert cost.fit.seconds(1, 150) == pytest.approx(1.8)
    assert cost.fit.seconds(2, 300) == pytest.approx(0.6 + 3.0)  # a batch: its reviews and summed size


def test_batches_and_single_reviews_fit_together() -> None:
    cost = LengthCost()
    for reviews, chars in [(1, 20), (4, 100), (8, 900), (2, 400), (1, 300)]:
        cost.observe(0.5 * reviews + 0.002 * chars, reviews, chars)
    assert cost.fit is not None
    assert cost.fit.seconds(3, 600) == pytest.approx(1.5 + 1.2)


def test_no_fit_until_enough_samples_or_when_every_review_has_the_same_length() -> None:
    cost = LengthCost(min_samples=4)
    feed(cost, 0.3, 0.01, [10, 200, 50])
    assert cost.fit is None
    same = LengthCost()
    feed(same, 0.3, 0.01, [80] * 10)
    assert same.fit is None


def test_a_fit_where_longer_is_cheaper_is_not_trusted() -> None:
    cost = LengthCost()
    feed(cost, 2.0, -0.005, [10, 100, 200, 300])
    assert cost.fit is None


def test_the_window_follows_a_change_in_speed() -> None:
    cost = LengthCost(window=8)
    feed(cost, 1.0, 0.02, [10, 100, 200, 300] * 2)
    feed(cost, 0.2, 0.005, [10, 100, 200, 300] * 2)
    assert cost.fit is not None
    assert cost.fit.seconds(1, 100) == pytest.approx(0.7)


def test_clock_estimates_by_length_once_fitted_and_by_average_before() -> None:
    clock = ServiceClock(initial_s=1.0)
    assert clock.estimate_s(3, 999) == pytest.approx(3.0)  # nothing measured: the initial guess per review
    assert clock.estimate_s(0, 0) == 0.0
    clock.observe(9.0, 1, 50)  # a cold first run: kept out of the length fit
    feed(clock, 0.5, 0.01, [20, 300, 100])
    assert clock.length.fit is None
    assert clock.estimate_s(2, 40) == pytest.approx(2 * clock.per_review_s)
    feed(clock, 0.5, 0.01, [250])
    assert clock.estimate_s(1, 20) == pytest.approx(0.7)
    assert clock.estimate_s(1, 300) == pytest.approx(3.5)
    assert clock.per_review_s > 3.5  # the plain average is still kept (Retry-After uses it)


def twin_s(tokens: int) -> float:
    """The twin's shape on 2026-12-05's host, one thread: 21 tokens 0.35 s, 63 tokens 0.99 s, 512 tokens 11.0 s."""
    return 0.05 + 0.014 * tokens + 1.45e-5 * tokens * tokens


def test_token_cost_finds_attentions_square_and_predicts_a_long_review_at_its_cost() -> None:
    """A line through these same reviews would put the 512-token review well under its 11 s: those admitted
    behind it would start late."""
    cost = TokenCost()
    for tokens in (21, 24, 31, 40, 46, 63, 127, 21, 40, 512):
        cost.observe(tokens, twin_s(tokens))
    assert cost.largest == 512
    assert cost.seconds(512) == pytest.approx(twin_s(512), rel=1e-3)
    assert cost.seconds(300) == pytest.approx(twin_s(300), rel=1e-3)  # between what was measured
    assert cost.seconds(21) == pytest.approx(twin_s(21), rel=1e-3)


def test_token_cost_trusts_nothing_until_it_has_seen_different_lengths() -> None:
    cost = TokenCost(min_samples=4)
    for _ in range(3):
        cost.observe(40, 1.0)
    assert cost.seconds(40) is None  # too few
    cost.observe(40, 1.0)
    assert cost.seconds(40) is None  # one length: no slope to read
    cost.observe(80, 2.0)
    assert cost.seconds(120) == pytest.approx(3.0)  # two lengths: a line


def test_token_cost_never_bends_down_nor_falls_with_length() -> None:
    """Noise that would bend the curve down (a long review cheaper than its line says) gives a line instead:
    attention adds cost as a review grows, and a curve bent down would predict long reviews short."""
    cost = TokenCost()
    for tokens, seconds in ((20, 0.4), (40, 0.9), (60, 1.2), (80, 1.3)):
        cost.observe(tokens, seconds)
    a, b, c = rising_curve([20, 40, 60, 80], [0.4, 0.9, 1.2, 1.3]) or (0.0, 0.0, -1.0)
    assert c == 0 and b > 0
    assert cost.seconds(80) == pytest.approx(a + b * 80)
    assert rising_curve([10, 20, 30], [3.0, 2.0, 1.0]) is None  # longer never cheaper: nothing trusted
    cost.observe(0, 1.0)  # no tokens, or no time: not a measurement
    cost.observe(50, 0.0)
    assert cost.samples == 4
