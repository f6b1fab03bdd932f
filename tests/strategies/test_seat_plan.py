"""②'s seat forecast on its own: seats free at the times the lane's backlog says, a hold rests only on a seat
someone admitted frees, and a walk-in takes no seat a returner is due in (one of a crowd that found the box empty
may make it at most a second, or a review, late)."""

from app.paths.seat_plan import Returner, SeatPlan


def burst_box(capacity: int = 5) -> SeatPlan:
    """A burst just admitted on an idle lane: one in flight (1 s left), the rest seated, 1 s a review."""
    return SeatPlan.of(capacity, ahead_s=1.0, in_flight=1, seated_s=[1.0] * (capacity - 1), returners=[])


def promised(plan: SeatPlan, refusals: int, horizon: int = 15) -> tuple[SeatPlan, list[int | None]]:
    """Refuse `refusals` more, each given a hold for the first seat the forecast sees for one (as the gate does)."""
    dues: list[int | None] = []
    for _ in range(refusals):
        due = plan.first_hold(horizon)
        dues.append(due)
        if due is not None:
            plan = SeatPlan(plan.capacity, plan.leaves_s, plan.tail_s, (*plan.returners, Returner(float(due), 1.0)))
    return plan, dues


def test_a_burst_of_12_holds_the_five_seats_its_admitted_free_one_a_second_and_no_more() -> None:
    plan, dues = promised(burst_box(), 7)
    assert dues == [1, 2, 3, 4, 5, None, None]  # before: 1…7, the last two on seats returners would free
    assert plan.keeps_promises()
    # The two without a hold hear when a seat is free if every returner comes: after the first one's review.
    assert plan.first_free(1.0) == 6


def test_holds_never_exceed_the_seats_the_admitted_free_however_many_are_refused() -> None:
    plan, dues = promised(burst_box(capacity=2), 20)
    assert dues[:2] == [1, 2] and set(dues[2:]) == {None}  # a retry loop's tries add no promise
    assert plan.keeps_promises()


def test_no_hold_is_promised_past_the_horizon() -> None:
    _, dues = promised(burst_box(), 7, horizon=2)
    assert dues == [1, 2, None, None, None, None, None]  # a third would wait for 3 reviews to end


def test_a_walk_in_may_sit_unless_it_takes_a_seat_a_returner_is_due_in() -> None:
    lone = SeatPlan.of(2, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(1.0, 1.0)])
    assert lone.admits_walk_in(1.0)  # the one in flight leaves as the returner comes
    soon = SeatPlan.of(2, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(0.1, 1.0)])
    assert not soon.admits_walk_in(1.0)  # the returner would sit down 0.9 s late


def test_the_crowd_that_found_the_box_empty_may_make_a_returner_at_most_a_second_or_a_review_late() -> None:
    soon = SeatPlan.of(2, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(0.1, 1.0)])
    assert soon.admits_walk_in(1.0, slack=True)  # 0.9 s late: within the second after its due time
    far = SeatPlan.of(2, ahead_s=2.5, in_flight=1, seated_s=[], returners=[Returner(0.1, 1.0)])
    assert not far.admits_walk_in(1.0, slack=True)  # 2.4 s late: more than a second and more than its review
    slow = SeatPlan.of(2, ahead_s=2.0, in_flight=1, seated_s=[], returners=[Returner(0.5, 2.0)])
    assert slow.admits_walk_in(2.0, slack=True)  # 1.5 s late on a box of 2 s reviews: no seat frees sooner


def test_a_walk_in_may_take_a_seat_that_frees_before_any_promise_needs_it() -> None:
    # Three seats, one in flight for 1 s, two returners due at 1.5 s: one walk-in leaves at 2 s and leaves
    # them room; a second would still be seated when they come (with the crowd: half a second late, then a
    # third, 1.5 s late, is too many).
    plan = SeatPlan.of(3, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(1.5, 1.0), Returner(1.5, 1.0)])
    assert plan.admits_walk_in(1.0) and plan.with_walk_in(1.0).keeps_promises()
    assert not plan.with_walk_in(1.0).admits_walk_in(1.0)
    assert plan.with_walk_in(1.0).admits_walk_in(1.0, slack=True)
    assert not plan.with_walk_in(1.0).with_walk_in(1.0).admits_walk_in(1.0, slack=True)


def test_the_class_firing_again_as_its_first_round_ends_fills_every_seat() -> None:
    # The first round's admitted are gone; one hold is still ahead, due 0.9 s from now (its Retry-After was
    # rounded up). The first walk-in is on the lane for 1 s: four more of its crowd fit, the returner then
    # sits down 0.1 s late; to the letter, the fifth would not.
    plan = SeatPlan.of(5, ahead_s=1.0, in_flight=1, seated_s=[], returners=[Returner(0.9, 1.0)])
    for _ in range(3):
        assert plan.admits_walk_in(1.0)
        plan = plan.with_walk_in(1.0)
    assert not plan.admits_walk_in(1.0) and plan.admits_walk_in(1.0, slack=True)


def test_holds_due_in_the_same_second_leave_room_for_a_class_on_a_fast_box() -> None:
    # Reviews of 0.2 s: the first round's five seats were held for four returners due in the same second
    # (now + 0.05 s). The class's five walk-ins still fit: the last returner sits down 0.75 s late.
    plan = SeatPlan.of(5, ahead_s=0.2, in_flight=1, seated_s=[], returners=[Returner(0.05, 0.2)] * 4)
    for _ in range(4):
        assert plan.admits_walk_in(0.2, slack=True)
        plan = plan.with_walk_in(0.2)


def test_a_newcomer_is_never_promised_a_seat_before_a_second_from_now() -> None:
    assert SeatPlan.of(1, ahead_s=0.0, in_flight=0, seated_s=[], returners=[]).first_hold() == 1
    # A promise slots in before a later one when the seat is free then and the later returner still fits.
    plan = SeatPlan.of(2, ahead_s=0.5, in_flight=1, seated_s=[], returners=[Returner(5.0, 1.0)])
    assert plan.first_hold() == 1
    assert plan.first_free(1.0) == 1


def test_a_slow_lane_holds_the_seats_its_admitted_free_whenever_they_free() -> None:
    slow = SeatPlan.of(3, ahead_s=2.0, in_flight=1, seated_s=[2.0, 2.0], returners=[])
    _, dues = promised(slow, 4)
    assert dues == [2, 4, 6, None]  # the admitted leave at 2, 4 and 6 s


def test_a_lane_behind_its_forecast_still_promises_later_seats_and_makes_no_late_returner_later() -> None:
    # The returner was promised a seat 0.1 s from now, but both seats stay taken for 1 s and 2 s: it will wait.
    late = SeatPlan.of(2, ahead_s=1.0, in_flight=1, seated_s=[1.0], returners=[Returner(0.1, 1.0)])
    assert not late.keeps_promises()
    assert late.first_hold() == 2  # the seat after the late returner's, not never
    assert not late.admits_walk_in(1.0)  # (a seat is not free now anyway) a walk-in would make it later still
