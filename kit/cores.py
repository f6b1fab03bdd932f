"""Which core a benchmark's model runs on: the last one this process may use.

The benchmarks pin the model to one core so their numbers are one CPU's, whatever the host
has; the others stay free for the client and the OS. A one-core host pins to that core.
Where the OS cannot pin (macOS has no `sched_setaffinity`), the reports say "not pinned".
"""

import os


def bench_core() -> int | None:
    """The last core this process may run on; None where the OS cannot say."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def pin_here(core: int | None) -> None:
    """Pin this process to `core` (no-op where the OS cannot pin)."""
    if core is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {core})


def keep_off(core: int) -> None:
    """Pin this process to every CPU but `core`, so a client never takes the servers' core."""
    others = set(os.sched_getaffinity(0)) - {core}
    if others:
        os.sched_setaffinity(0, others)


def affinity() -> str:
    """This process's pinning, in the words a report uses."""
    if not hasattr(os, "sched_getaffinity"):
        return "NOT pinned (this OS cannot pin)"
    cores = sorted(os.sched_getaffinity(0))
    return f"pinned to core {cores[0]}" if len(cores) == 1 else f"NOT pinned ({len(cores)} cores allowed)"
