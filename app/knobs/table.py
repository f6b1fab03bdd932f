"""Which of the registry's knobs an instructor may turn at runtime, and the owner each one is handed to.

Bounds and units come from the registry (app/paths/registry.py): each path's knobs, and the box's own
(`BOX_KNOBS`: its target seconds per review and its memory cap, owned by app/boxed/knobs.py; absent,
with the reason, on a server the box does not slow or cap). Not turnable live (yet): ①'s memory
guard (it measures an inference's memory at start-up).
"""

from pathlib import Path

from app.boxed.knobs import box_appliers
from app.boxed.speed import SpeedLoop
from app.knobs.board import Apply, KnobBoard
from app.knobs.instructor import instructor_token
from app.memory.guard import MemoryGuard
from app.paths.adaptive import AdaptiveGate
from app.paths.batched import MicroBatcher
from app.paths.limited import SeatGate
from app.paths.registry import Knob, every_knob
from app.paths.tickets import TicketService
from app.settings import Settings


def knob_board(
    settings: Settings,
    gate: SeatGate,
    batcher: MicroBatcher,
    tickets: TicketService,
    adaptive: AdaptiveGate,
    file: Path | None,
    speed: SpeedLoop | None = None,
    guard: MemoryGuard | None = None,
) -> KnobBoard:
    """The board for one lab, with the values a previous run left already applied."""
    appliers: dict[str, Apply] = {
        "limited_seats": lambda v: gate.retune(seats=int(v)),
        "limited_max_wait_s": lambda v: gate.retune(max_wait_s=v),
        "batch_window_s": lambda v: batcher.retune(window_s=v),
        "batch_max": lambda v: batcher.retune(max_size=int(v)),
        "batch_max_wait_s": lambda v: batcher.retune(max_wait_s=v),
        "queue_max_jobs": lambda v: tickets.retune(queue_max_jobs=int(v)),
        "adaptive_target_reviews": lambda v: adaptive.retune(target_reviews=v),
        "adaptive_interval_reviews": lambda v: adaptive.retune(interval_reviews=v),
    }
    box, absent = box_appliers(settings.box_state, speed, guard)
    appliers |= box
    knobs: list[Knob] = [knob for knob in every_knob().values() if knob.setting in appliers]
    table = {knob.setting: (knob, appliers[knob.setting]) for knob in knobs}
    board = KnobBoard(settings, dict(table), file, instructor_token(settings.instructor_token_file), absent)
    board.restore(every_knob())
    return board
