"""Held seats' tokens on their own: one seat, once, within the grace window, from this box only."""

from app.paths.holds import HoldCheck, SeatHolds


class Clock:
    """A clock the test moves by hand, so expiry is tested without waiting."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def holds(clock: Clock, **kw: float) -> SeatHolds:
    return SeatHolds(grace_s=kw.get("grace_s", 3.0), horizon_reviews=int(kw.get("horizon_reviews", 15)), clock=clock)


def test_a_live_token_claims_its_seat_once() -> None:
    clock = Clock()
    seats = holds(clock)
    token = seats.issue(2, 2)
    assert token is not None and seats.live == 1
    check, hold_id = seats.check(token)
    assert check is HoldCheck.VALID
    assert seats.claim(hold_id)
    assert seats.live == 0
    assert seats.check(token)[0] is HoldCheck.USED
    assert not seats.claim(hold_id)
    assert seats.snapshot().results == {"seated": 1, "forged": 0, "expired": 0, "used": 1}


def test_forged_tokens_are_told_apart_from_live_ones() -> None:
    clock = Clock()
    seats = holds(clock)
    token = seats.issue(2, 2)
    assert token is not None
    hold_id, _, mac = token.partition(".")
    other_box = holds(clock).issue(2, 2)
    assert other_box is not None
    flipped = mac[:-1] + ("A" if mac[-1] != "A" else "B")
    for forged in (f"{hold_id}.{flipped}", hold_id, "", "....", other_box, token + "x" * 100, f"{hold_id}.{mac}.x"):
        assert seats.check(forged)[0] is HoldCheck.FORGED, forged
    assert seats.live == 1  # the real hold is untouched
    assert seats.check(token)[0] is HoldCheck.VALID


def test_a_hold_expires_after_its_grace_window_and_counts_a_no_show() -> None:
    clock = Clock()
    seats = holds(clock, grace_s=3.0)
    token = seats.issue(2, 2)
    assert token is not None
    clock.now += 2 + 3 - 0.01
    assert seats.check(token)[0] is HoldCheck.VALID
    assert 0 < seats.expires_in(seats.check(token)[1]) <= 0.01 + 1e-9
    clock.now += 0.02
    assert seats.live == 0
    assert seats.check(token)[0] is HoldCheck.EXPIRED
    assert seats.snapshot().no_shows == 1


def test_no_hold_when_off() -> None:
    """The horizon is the gate's (its forecast knows the seats ahead): tests/strategies/test_limited_holds.py."""
    assert holds(Clock(), grace_s=0.0).issue(1, 1) is None


def test_one_bearer_per_hold_a_copy_is_used_and_the_bearer_outlives_the_clock() -> None:
    clock = Clock()
    seats = holds(clock, grace_s=3.0)
    token = seats.issue(2, 2)
    assert token is not None
    hold_id = seats.check(token)[1]
    assert seats.arrive(hold_id) is HoldCheck.VALID and seats.waited_for(hold_id)
    assert seats.arrive(hold_id) is HoldCheck.USED  # a copy while the bearer waits
    clock.now += 2 + 3 + 1  # past the grace window: a hold whose bearer waits is not a no-show
    assert seats.live == 1
    seats.give_up(hold_id)
    snap = seats.snapshot()
    assert (snap.live, snap.no_shows) == (0, 0)
    assert snap.results == {"seated": 0, "forged": 0, "expired": 1, "used": 1}
    assert seats.check(token)[0] is HoldCheck.EXPIRED


def test_the_holds_ahead_are_those_not_yet_due() -> None:
    clock = Clock()
    seats = holds(clock)
    seats.issue(1, 10)
    seats.issue(3, 30)
    clock.now += 2
    assert [(hold.due - clock.now, hold.chars) for hold in seats.ahead()] == [(1.0, 30)]
    assert seats.live == 2  # the first is past due but within its grace window


def test_a_dropped_hold_frees_its_seat() -> None:
    clock = Clock()
    seats = holds(clock)
    token = seats.issue(1, 1)
    assert token is not None
    seats.drop(seats.check(token)[1])
    assert seats.live == 0
    assert seats.check(token)[0] is HoldCheck.GONE


def test_times_told_without_a_hold_are_kept_until_due_and_are_no_holds() -> None:
    clock = Clock()
    seats = holds(clock)
    start = clock.now
    seats.tell(2, chars=30)
    seats.tell(3)
    assert [h.due - start for h in seats.told()] == [2.0, 3.0] and seats.live == 0 and seats.ahead() == []
    clock.now += 2.5
    assert [h.due - start for h in seats.told()] == [3.0]
    seats.tell(1)
    assert [h.due - start for h in seats.told()] == [3.0, 3.5]
