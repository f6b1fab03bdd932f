"""②'s seat policy on fake clocks: its rules on one snapshot, then its trade-offs on the class walk.

The class walk (2026-12-05, through the front) had 3 pages fire ② 12 with "거절되면 다시 오기" beside a walk-in
page: 6 of 31 returners were seated on their first return, because every refusal past the hold horizon was
told the same second. The policy must seat at least half of them on their first return and never leave the
lane idle while it refuses a walk-in.
"""

from dataclasses import replace

from app.paths.seat_plan import Returner
from app.paths.seat_policy import Refusal, Seats, admits_walk_in, refusal, wait_s
from tests.strategies.seat_walk import Box, Request, class_walk

BURST = Seats(capacity=5, lane_ahead_s=1.0, in_flight=1, seated_s=(1.0,) * 4)  # 12 just fired at an idle ②
SHORT = [0.44] * 10 + [1.26, 0.98]  # a page's first burst (the first 12 samples) at 1 s per median review
WALK_INS = (2.5, 7.5, 12.5, 17.5)  # the walk-in page fires ② 4 at these seconds


def told_in_turn(seats: Seats, refusals: int) -> list[Refusal]:
    """Refuse `refusals` at once, each remembered as the gate remembers it (held or told)."""
    answers = []
    for _ in range(refusals):
        answer = refusal(seats, 1.0)
        answers.append(answer)
        place = (Returner(float(answer.retry_after_s), 1.0),)
        seats = replace(seats, held=seats.held + place) if answer.hold else replace(seats, told=seats.told + place)
    return answers


def test_a_class_is_told_one_place_each_however_long_the_line() -> None:
    answers = told_in_turn(replace(BURST, horizon_reviews=15), 31)
    assert [a.hold for a in answers] == [True] * 5 + [False] * 26  # a hold for each seat the admitted free
    # One second apart, past the horizon too (before: every refusal past it heard 6 s, and came back together).
    assert [a.retry_after_s for a in answers] == list(range(1, 32))


def test_a_later_refusal_never_takes_an_earlier_ones_place() -> None:
    # Four holds on the admitted's first four seats; someone was told 5 s without a hold (the box changed since).
    seats = replace(BURST, held=tuple(Returner(float(d), 1.0) for d in (1, 2, 3, 4)), told=(Returner(5.0, 1.0),))
    assert refusal(seats, 1.0) == Refusal(6, hold=False)  # the fifth seat is the told one's: no hold on it


def test_a_walk_in_takes_lane_time_that_would_idle_and_a_returner_then_sits_a_little_late() -> None:
    # One seat beside the lane; the review on it ends in 0.2 s and two returners are due at 1 s. A 1 s walk-in
    # makes the second sit down 0.2 s late, but without it the lane stands idle for 0.8 s.
    idle_soon = Seats(capacity=2, lane_ahead_s=0.2, in_flight=1, seated_s=(), held=(Returner(1.0, 1.0),) * 2)
    assert admits_walk_in(idle_soon, 1.0)
    # The lane busy until past a returner's due time: no idle time to take, so the promise holds to the letter.
    busy = Seats(capacity=2, lane_ahead_s=1.0, in_flight=1, seated_s=(), held=(Returner(0.9, 1.0),) * 2)
    assert not admits_walk_in(busy, 1.0)
    # Idle time, but the walk-in would make a returner more than a second (and a review) late: no.
    long_walk_in = Seats(capacity=2, lane_ahead_s=0.1, in_flight=1, seated_s=(), held=(Returner(0.5, 1.0),) * 2)
    assert not admits_walk_in(long_walk_in, 2.5)


def test_the_crowd_that_found_the_box_empty_fills_it_and_returners_in_the_lobby_go_first() -> None:
    # ② went from empty to busy 0.5 s ago; a hold is due in 0.9 s. To the letter the fifth of the crowd would
    # wait; with the crowd it sits, and the returner sits down 0.1 s late.
    crowd = Seats(capacity=5, lane_ahead_s=1.0, in_flight=1, seated_s=(1.0,) * 3, held=(Returner(0.9, 1.0),))
    assert not admits_walk_in(crowd, 1.0)
    assert admits_walk_in(replace(crowd, busy_for_s=0.5), 1.0)
    assert not admits_walk_in(replace(crowd, busy_for_s=0.5, in_lobby=1), 1.0)
    assert admits_walk_in(Seats(capacity=1, lane_ahead_s=0.0, in_flight=0, seated_s=(), held=crowd.held), 3.0)


def test_without_holds_a_refusal_hears_when_the_lane_reaches_the_last_seated() -> None:
    off = replace(BURST, holds_on=False, per_review_s=1.5)
    assert refusal(off, 1.0) == Refusal(wait_s(off), hold=False) and wait_s(off) == 1.0 + 4 * 1.5


def test_the_class_walk_seats_most_returners_on_their_first_return_and_walk_ins_whenever_the_lane_would_idle() -> None:
    for seed in range(1, 6):
        walk = class_walk(Box(seed=seed), SHORT, walk_in_at=WALK_INS)
        assert walk.returners == 31
        assert walk.seated_on_first_return >= 16, seed  # the class walk: 6 of 31
        assert walk.walk_ins_served >= 3, seed
        assert walk.walk_ins_refused_at_an_idle_lane == 0 and walk.lane_idle_s_after_walk_in_refusals == 0, seed
        assert walk.latest_returner_s <= 1.0, seed  # a held returner sits down within the promised second


def test_the_trade_reservations_buy_returners_with_walk_ins_and_never_with_idle_time() -> None:
    for seed in range(1, 4):
        held = class_walk(Box(seed=seed), SHORT, walk_in_at=WALK_INS)
        plain = class_walk(Box(seed=seed, grace_s=0.0), SHORT, walk_in_at=WALK_INS)
        assert held.seated_on_first_return > 2 * plain.seated_on_first_return, seed
        assert held.walk_ins_served <= plain.walk_ins_served, seed
        # On a lane that returners keep busy (1 s reviews, forecast exactly), walk-ins wait; the lane never idles.
        tight = class_walk(Box(seed=seed), [1.0] * 12, walk_in_at=WALK_INS)
        assert tight.seated_on_first_return >= 30 and tight.walk_ins_served <= 1, seed
        assert tight.lane_idle_s_after_walk_in_refusals == 0, seed


def test_a_lane_slower_than_its_forecast_still_seats_half_the_returners_within_the_grace() -> None:
    for seed in range(1, 4):
        slow = class_walk(Box(seed=seed, forecast=0.8), [1.0] * 12, walk_in_at=WALK_INS)
        assert slow.seated_on_first_return >= 16, seed
        assert slow.walk_ins_refused_at_an_idle_lane == 0, seed


def test_a_class_that_never_comes_back_leaves_the_next_crowd_and_walk_ins_their_seats() -> None:
    box = Box()
    for i in range(144):  # 12 pages × ② 12 without the toggle: nobody comes back
        box.send(0.0, Request("page", i, 1.0, returns_left=0))
    for i in range(12):  # the class fires again as the first round ends
        box.send(5.01, Request("again", i, 1.0, returns_left=0))
    for i in range(2):  # walk-ins a while later, without a token
        box.send(12.0 + i, Request("walk-in", i, 1.0, returns_left=0))
    box.run()
    again = [t for t in box.tries if t.who == "again"]
    assert sum(t.seated for t in again) == 5  # as the first round
    assert all(t.seated for t in box.tries if t.who == "walk-in")
    assert box.no_shows == 5  # one hold for each seat the first round's admitted freed, no more
