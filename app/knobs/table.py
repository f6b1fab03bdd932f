"""Which of the registry's knobs an instructor may turn at runtime, and the owner each one is handed to.

Bounds and units come from the registry (app/paths/registry.py): each path's knobs, and the box's own
(`BOX_KNOBS`: its target seconds per review and its memory cap, owned by app/knobs/box.py; absent,
with the reason, on a server the box does not slow or cap). Not turnable live (yet): ①'s memory
guard (it measures an inference's memory at start-up).
"""

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from app.inside.speed import SpeedLoop
from app.knobs.board import Apply, KnobBoard
from app.knobs.box import box_appliers
from app.knobs.instructor import instructor_token
from app.memory.guard import MemoryGuard
from app.paths.registry import Knob, LabPath, every_knob
from app.settings import Settings


@runtime_checkable
class Retunable(Protocol):
    """A path owner an instructor can turn: `retune(seats=8)`, one keyword per knob (the registry's `retune`)."""

    def retune(self, *args: Any, **kwargs: Any) -> None: ...


def path_appliers(paths: Sequence[LabPath]) -> dict[str, Apply]:
    """Each registered knob that names a `retune` keyword, handed to its own path's owner: a new path's knobs
    need no entry here."""
    appliers: dict[str, Apply] = {}
    for path in paths:
        for knob in path.spec.knobs:
            if knob.retune and isinstance(path, Retunable):
                appliers[knob.setting] = applier(path, knob)
    return appliers


def applier(owner: Retunable, knob: Knob) -> Apply:
    return lambda value: owner.retune(**{knob.retune: round(value) if knob.whole else value})


def knob_board(
    settings: Settings,
    paths: Sequence[LabPath],
    file: Path | None,
    speed: SpeedLoop | None = None,
    guard: MemoryGuard | None = None,
) -> KnobBoard:
    """The board for one lab, with the values a previous run left already applied."""
    appliers = path_appliers(paths)
    box, absent = box_appliers(settings.box_state, speed, guard)
    appliers |= box
    declared = every_knob(tuple(path.spec for path in paths))
    knobs: list[Knob] = [knob for knob in declared.values() if knob.setting in appliers]
    table = {knob.setting: (knob, appliers[knob.setting]) for knob in knobs}
    board = KnobBoard(settings, dict(table), file, instructor_token(settings.instructor_token_file), absent)
    board.restore(declared)
    return board
