"""Inference takes the back seat on the box's one CPU: the event loop (the door) runs first whenever it has work.

The whole server shares the box's one slow CPU (its CPU quota, app/inside/calibrate.py). The
kernel shares it among runnable threads by weight, so a door that answers a refusal or
/health got 1/(N+1) of it beside N running inferences: 144 refusals at once took seconds
(docs/reliability.md). Each thread that runs an inference is lowered once, for good, to
nice 19 and SCHED_BATCH (weight 15 against the door's 1024): the door still pays for every
cycle it uses out of the same quota, but no longer waits behind inferences for it. Never the
main thread, which becomes the event loop (and times the first review at start-up).
"""

import logging
import os
import sys
import threading

log = logging.getLogger(__name__)

BACK_SEAT_NICE = 19
_lowered = threading.local()


def take_back_seat() -> None:
    """Lower the calling thread (once; Linux only; never the main thread): nice 19 and SCHED_BATCH."""
    if getattr(_lowered, "done", False) or threading.current_thread() is threading.main_thread():
        return
    _lowered.done = True
    if not sys.platform.startswith("linux"):
        return
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_BATCH, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, tid, max(os.getpriority(os.PRIO_PROCESS, tid), BACK_SEAT_NICE))
    except OSError as err:  # a seccomp'd container may refuse: inference then shares the CPU evenly, as before
        log.warning("Cannot lower inference thread %d's priority: %s.", tid, err.strerror or err)


def niceness(tid: int) -> tuple[int, int]:
    """(scheduling policy, nice) of a thread: what the tests read back."""
    return os.sched_getscheduler(tid), os.getpriority(os.PRIO_PROCESS, tid)
