"""Inference threads take the back seat on the box's CPU; the main thread (the event loop, the door) never does."""

import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence

import pytest

from app.engine.model import Ranking, Wanted
from app.inside.meter import ReviewMeter
from app.inside.priority import BACK_SEAT_NICE, niceness, take_back_seat

LINUX_ONLY = "per-thread nice and SCHED_BATCH are Linux's"
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason=LINUX_ONLY)


class Recording:
    """A scorer that notes the scheduling of the thread it runs in."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        raise NotImplementedError

    def score_each(self, texts: Sequence[str], wanted: Wanted | None = None) -> Iterator[tuple[int, Ranking]]:
        self.seen.append(niceness(threading.get_native_id()))
        yield from ()


def in_thread(call: Callable[[], object]) -> None:
    thread = threading.Thread(target=call)
    thread.start()
    thread.join()


def test_a_thread_that_runs_an_inference_is_lowered_for_good_and_the_main_thread_never() -> None:
    inner = Recording()
    meter = ReviewMeter(inner)
    before = niceness(threading.get_native_id())
    list(meter.score_each(["한 리뷰"]))  # the main thread: the door
    assert niceness(threading.get_native_id()) == before
    in_thread(lambda: list(meter.score_each(["한 리뷰"])))
    assert inner.seen[0] == before
    assert inner.seen[1] == (os.SCHED_BATCH, BACK_SEAT_NICE)


def test_taking_the_back_seat_twice_is_once() -> None:
    seen: list[tuple[int, int]] = []

    def twice() -> None:
        take_back_seat()
        take_back_seat()
        seen.append(niceness(threading.get_native_id()))

    in_thread(twice)
    assert seen == [(os.SCHED_BATCH, BACK_SEAT_NICE)]
