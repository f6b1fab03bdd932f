"""⑤'s controllers on their own, with times the test writes: CoDel's standing queue, the Vegas-like limit and
the promise check."""

from app.paths.adaptive_control import Crowd, StandingQueue, VegasLimit, lateness_s, pick

TARGET, INTERVAL = 1.0, 4.0


def seen(queue: StandingQueue, now: float, ahead_s: float, *, idle: bool = False) -> bool:
    return queue.seen(now, ahead_s, idle=idle, target_s=TARGET, interval_s=INTERVAL)


def test_a_queue_stands_only_after_a_whole_interval_with_more_than_the_target_ahead() -> None:
    queue = StandingQueue()
    assert not seen(queue, 0.0, 0.0, idle=True)
    assert not seen(queue, 1.0, 1.5)  # over the target: the interval starts here
    assert not seen(queue, 2.0, 0.5)  # within it: it starts again
    assert not seen(queue, 3.0, 2.0)
    assert not seen(queue, 6.9, 3.0)
    assert seen(queue, 7.0, 3.0)
    assert queue.since == 7.0


def test_a_burst_that_drains_within_the_interval_never_stands() -> None:
    queue = StandingQueue()
    for now, ahead in ((0.0, 3.0), (1.0, 2.0), (2.0, 1.5), (3.5, 0.5), (9.0, 0.0)):
        assert not seen(queue, now, ahead, idle=ahead == 0)


def test_a_refusal_makes_the_queue_stand_at_once() -> None:
    queue = StandingQueue()
    queue.refused(0.5)
    assert queue.standing and queue.since == 0.5


def test_a_standing_queue_goes_only_when_a_newcomer_finds_the_box_idle_and_nobody_crowded_for_an_interval() -> None:
    queue = StandingQueue()
    queue.refused(0.0)
    assert seen(queue, 1.0, 0.0, idle=True)  # idle, but refused within the interval
    assert seen(queue, 3.0, 2.0)  # crowded again: more than the target ahead
    assert seen(queue, 6.0, 0.2)  # an interval since the refusal, but the box is busy
    assert seen(queue, 6.5, 0.0, idle=True)  # idle, but crowded within the interval
    assert not seen(queue, 7.0, 0.0, idle=True)


def test_the_box_is_busy_since_the_last_newcomer_that_found_it_idle() -> None:
    queue = StandingQueue()
    seen(queue, 5.0, 0.0, idle=True)
    seen(queue, 5.1, 0.9)
    assert queue.busy_since == 5.0


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


def test_lateness_is_that_of_the_best_order_earliest_promise_first() -> None:
    # (seconds on the lane, latest promised start), from 1 s of backlog: in arrival order the second would start
    # half a second late, earliest promise first keeps both with half a second to spare.
    assert lateness_s(1.0, [(1.0, 3.0), (1.0, 1.5)]) == -0.5
    assert lateness_s(1.0, [(1.0, 1.5), (1.0, 1.5)]) == 0.5  # no order starts the second by 1.5 s
    assert lateness_s(0.0, []) == float("-inf")


def test_the_newest_goes_first_unless_that_makes_an_older_waiter_late() -> None:
    slack = [(1.0, 5.0), (1.0, 6.0), (1.0, 7.0)]  # (seconds on the lane, latest promised start) in arrival order
    assert pick(slack, 1.0, newest=True) == 2
    assert pick(slack, 1.0, newest=False) == 0
    tight = [(1.0, 1.5), (1.0, 2.5), (1.0, 3.5)]  # behind the newest, the oldest would start at 2: late
    assert pick(tight, 1.0, newest=True) == 0
    already_late = [(1.0, 0.5), (1.0, 0.5)]  # no order keeps both: the newest first is no worse
    assert pick(already_late, 1.0, newest=True) == 1


def test_a_students_second_request_in_a_crowd_is_a_repeat_and_a_keyless_one_never_is() -> None:
    crowd = Crowd()
    assert not crowd.repeat("a", 10.0)  # a's first: judged at once
    assert crowd.repeat("a", 10.0)
    assert not crowd.repeat("b", 10.0)
    assert not crowd.repeat(None, 10.0) and not crowd.repeat(None, 10.0)  # no key: each request its own
    assert not crowd.repeat("a", 20.0)  # the box went idle and busy again: a new crowd, a's first in it
    assert crowd.came == {"a"}
