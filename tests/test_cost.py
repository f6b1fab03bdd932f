"""The length-aware cost model: fitted from observations, trusted only when it can tell long from short."""

import pytest

from app.engine.clock import ServiceClock
from app.engine.cost import LengthCost


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
