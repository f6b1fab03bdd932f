"""⑤'s controllers on their own, with times the test writes: CoDel's standing queue, the Vegas-like limit and
the promise check."""

from app.paths.adaptive_control import StandingQueue, VegasLimit, lateness_s

TARGET, INTERVAL = 1.0, 4.0


def seen(queue: StandingQueue, now: float, oldest_s: float | None) -> bool:
    return queue.seen(now, oldest_s, target_s=TARGET, interval_s=INTERVAL)


def test_a_queue_stands_only_after_a_whole_interval_above_the_target() -> None:
    queue = StandingQueue()
    assert not seen(queue, 0.0, None)
    assert not seen(queue, 1.0, 0.5)  # within target: the interval starts again from here
    assert not seen(queue, 4.9, 3.9)
    assert seen(queue, 5.0, 4.0)
    assert queue.since == 5.0


def test_a_burst_that_drains_within_the_interval_never_stands() -> None:
    queue = StandingQueue()
    for now in (0.0, 1.0, 2.0, 3.0, 4.5, 6.0, 9.0):
        assert not seen(queue, now, 0.9 if now < 9 else None)


def test_a_standing_queue_stays_while_newcomers_find_it_crowded_and_goes_an_interval_after() -> None:
    queue = StandingQueue()
    seen(queue, 0.0, None)
    assert seen(queue, 4.0, 4.0)
    queue.crowded(5.0, refused=False)  # admitted, but more than the target was ahead of it
    assert seen(queue, 6.0, None)  # empty for a moment, but crowded within the interval
    assert seen(queue, 8.0, 0.1)  # newest first keeps sojourns short: that alone does not end it
    assert not seen(queue, 9.0, None)


def test_a_crowded_newcomer_admitted_does_not_make_a_draining_queue_stand() -> None:
    queue = StandingQueue()
    queue.crowded(0.0, refused=False)
    assert not seen(queue, 0.5, 0.2)


def test_the_limit_grows_while_alone_settles_at_two_and_backs_off_when_the_lane_is_shared() -> None:
    limit = VegasLimit(limit=1)
    assert limit.sample(1.0, 1.0, demand=True) == 2  # alone on the lane with demand waiting: one more
    assert limit.sample(2.0, 1.0, demand=True) == 2  # one ahead of each: the lane never idles, nobody waits long
    assert limit.sample(1.0, 1.0, demand=True) == 3
    assert limit.sample(3.0, 1.0, demand=True) == 2  # two of its own ahead: one fewer
    assert limit.sample(6.0, 1.0, demand=True) == 1  # other paths fill the lane
    assert limit.sample(6.0, 1.0, demand=True) == 1  # never below its floor


def test_the_limit_grows_only_with_demand_and_never_past_its_ceiling() -> None:
    limit = VegasLimit(limit=2, high=3)
    assert limit.sample(1.0, 1.0, demand=False) == 2
    assert [limit.sample(1.0, 1.0, demand=True) for _ in range(3)] == [3, 3, 3]
    assert limit.sample(0.0, 1.0, demand=True) == 3  # no measurement, no change


def test_a_newcomer_refused_at_the_door_makes_the_queue_stand_at_once() -> None:
    queue = StandingQueue()
    assert not seen(queue, 0.0, None)
    queue.crowded(0.5, refused=True)
    assert queue.standing and queue.since == 0.5
    assert seen(queue, 1.0, 0.4)
    assert not seen(queue, 4.5, None)


def test_lateness_is_that_of_the_best_order_earliest_promise_first() -> None:
    # (seconds on the lane, latest promised start), from 1 s of backlog: in arrival order the second would start
    # half a second late, earliest promise first keeps both with half a second to spare.
    assert lateness_s(1.0, [(1.0, 3.0), (1.0, 1.5)]) == -0.5
    assert lateness_s(1.0, [(1.0, 1.5), (1.0, 1.5)]) == 0.5  # no order starts the second by 1.5 s
    assert lateness_s(0.0, []) == float("-inf")
