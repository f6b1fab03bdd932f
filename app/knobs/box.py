"""The box's two instructor knobs as owners the knob board hands a value to (app/knobs/table.py): its
target seconds per review and its memory cap.

The target: the speed loop re-targets at once, its first guess the current fraction scaled by
old/new target (app/inside/speed.py `retarget`), with the quota's period and legal minimum of the new target.

The cap: this server writes its own memory cgroup's limit (`memory.limit_in_bytes` / `memory.max`)
itself, before anything is saved, so the instructor's PUT answers whether the kernel took it (a
refusal is a 422 and nothing changes); the folder is the box's, and the server already writes its CPU
quota beside it. Where there is no memory cgroup the supervisor's watchdog enforces the cap: it
learns the new one from the knobs file the board has just written (app/box/kept.py), the same file
that gives the next incarnation, and the next box, the instructor's values. One way for a value to
travel and nothing to keep in step: no signal, socket or second file between server and supervisor.
"""

from collections.abc import Callable
from pathlib import Path

import psutil

from app.errors import InvalidKnob
from app.inside.calibrate import MIN_QUOTA_US, period_for
from app.inside.cgroup_memory import memory_now, write_memory_limit
from app.inside.speed import SpeedLoop
from app.knobs.board import Apply
from app.memory.guard import MemoryGuard
from app.paths.registry import BOX_MEMORY_CAP, BOX_TARGET, MIB
from app.settings import BoxState

# A lowered cap must leave room for a few more sample reviews than run now (a burst of 12 grew the
# server by ~317 MiB, ~26 MiB a review: docs/box.md), so turning the knob never kills the box by itself.
MARGIN_BYTES = 100 * MIB
TARGET, CAP = BOX_TARGET.setting, BOX_MEMORY_CAP.setting


def retarget(speed: SpeedLoop, target_s: float) -> None:
    """The loop's new target; a quota's floor follows the new period (burning keeps its own)."""
    s = speed.setting
    floor = s.min_fraction if s.method == "burn" else MIN_QUOTA_US / period_for(target_s)
    speed.retarget(target_s, floor)


class BoxMemory:
    """The cap this server reports (its BoxState, read by /api/stats and /api/model), the ① guard's cap,
    and the cgroup limit that enforces it."""

    def __init__(self, state: BoxState, usage: Callable[[], int], guard: MemoryGuard | None = None) -> None:
        self._state = state
        self._usage = usage
        self._guard = guard

    def retune(self, cap_bytes: int) -> None:
        used = self._usage()
        if cap_bytes < used + MARGIN_BYTES:
            least = (used + MARGIN_BYTES) / MIB
            raise InvalidKnob(
                f"{CAP} cannot go below what the box uses now plus {MARGIN_BYTES // MIB} MiB: it uses "
                f"{used / MIB:.0f} MiB, so at least {least:.0f} MiB; got {cap_bytes / MIB:.0f} MiB."
            )
        if self._state.memory_dir is not None:
            try:
                write_memory_limit(Path(self._state.memory_dir), cap_bytes)
            except OSError as exc:
                raise InvalidKnob(
                    f"The kernel refused a memory cap of {cap_bytes / MIB:.0f} MiB ({exc.strerror or exc}); "
                    "the cap is unchanged."
                ) from exc
        self._state.memory_cap_bytes = cap_bytes
        if self._guard is not None:
            self._guard.cap_bytes = cap_bytes


def box_usage(state: BoxState) -> int:
    """What the panel shows as the box's memory: the cgroup's charge, else this process's RSS."""
    return int(memory_now(state.memory_dir, state.memory_cap_bytes, psutil.Process().memory_info().rss)["bytes"])


def box_appliers(
    state: BoxState | None, speed: SpeedLoop | None, guard: MemoryGuard | None
) -> tuple[dict[str, Apply], dict[str, str]]:
    """The box's knobs this server can turn, and why the others cannot be (outside the box, or off)."""
    appliers: dict[str, Apply] = {}
    absent: dict[str, str] = {}
    if speed is not None:
        appliers[TARGET] = lambda v: retarget(speed, v)
    else:
        absent[TARGET] = "it runs at the host's own speed (outside the box, or LAB_BOX_SECONDS_PER_REVIEW=0)"
    if state is not None and state.memory_cap_bytes > 0 and state.memory_mode in ("cgroup", "watchdog"):
        memory = BoxMemory(state, lambda: box_usage(state), guard)
        appliers[CAP] = lambda v: memory.retune(int(v))
    else:
        absent[CAP] = "nothing enforces a memory cap here (outside the box, or LAB_MEMORY_CAP_BYTES=0)"
    return appliers, absent
