"""②'s seat forecast on its own: seats free at the times the lane's backlog says, and a promise is a seat."""

from app.paths.seat_plan import Returner, SeatPlan


def burst_box(capacity: int = 5) -> SeatPlan:
    """A burst just admitted on an idle lane: one in flight (1 s left), the rest seated, 1 s a review."""
    return SeatPlan.of(capacity, ahead_s=1.0, in_flight=1, seated_s=[1.0] * (capacity - 1), returners=[])


def promised(plan: SeatPlan, refusals: int, horizon: int = 15) -> tuple[SeatPlan, list[int | None]]:
    """Refuse `refusals` more, each promised the first seat the forecast sees free (as the gate does)."""
    dues: list[int | None] = []
    for _ in range(refusals):
        due = plan.first_due(1.0, horizon)
        dues.append(due)
        if due is not None:
            plan = SeatPlan(plan.capacity, plan.leaves_s, plan.tail_s, (*plan.returners, Returner(float(due), 1.0)))
    return plan, dues


def test_a_burst_of_12_promises_one_seat_a_second_as_the_lane_frees_them() -> None:
    plan, dues = promised(burst_box(), 7)
    assert dues == [1, 2, 3, 4, 5, 6, 7]
    assert plan.keeps_promises()


def test_promises_never_exceed_the_seats_that_free_by_their_due_time() -> None:
    plan, dues = promised(burst_box(capacity=2), 20, horizon=10)
    assert dues[:10] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]  # one seat frees a second, and each is promised once
    assert set(dues[10:]) == {None}  # past the horizon (10 reviews end first): no promise at all
    assert plan.keeps_promises()


def test_a_walk_in_may_sit_unless_it_takes_a_seat_a_returner_is_due_in() -> None:
    lone = SeatPlan.of(2, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(1.0, 1.0)])
    assert lone.with_walk_in(1.0).keeps_promises()  # the one in flight leaves as the returner comes
    soon = SeatPlan.of(2, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(0.1, 1.0)])
    assert soon.keeps_promises() and not soon.with_walk_in(1.0).keeps_promises()


def test_a_walk_in_may_take_a_seat_that_frees_before_any_promise_needs_it() -> None:
    # Three seats, one in flight for 1 s, two returners due at 1.5 s: one walk-in leaves at 2 s and leaves
    # them room; a second would still be seated when they come.
    plan = SeatPlan.of(3, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(1.5, 1.0), Returner(1.5, 1.0)])
    assert plan.with_walk_in(1.0).keeps_promises()
    assert not plan.with_walk_in(1.0).with_walk_in(1.0).keeps_promises()


def test_a_newcomer_is_never_promised_a_seat_before_a_second_from_now() -> None:
    assert SeatPlan.of(1, ahead_s=0.0, in_flight=0, seated_s=[], returners=[]).first_due(1.0) == 1
    # A promise slots in between later ones when the seat is free then and every later returner still fits.
    plan = SeatPlan.of(2, ahead_s=0.5, in_flight=1, seated_s=[], returners=[Returner(5.0, 1.0)])
    assert plan.first_due(1.0) == 1


def test_a_lane_behind_its_forecast_still_promises_later_seats_and_makes_no_late_returner_later() -> None:
    # The returner was promised a seat 0.1 s from now, but both seats stay taken for 1 s and 2 s: it will wait.
    late = SeatPlan.of(2, ahead_s=1.0, in_flight=1, seated_s=[1.0], returners=[Returner(0.1, 1.0)])
    assert not late.keeps_promises()
    assert late.first_due(1.0) == 2  # the seat after the late returner's, not never
    assert not late.admits_walk_in(1.0)  # (a seat is not free now anyway) a walk-in would make it later still
