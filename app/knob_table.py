"""Which of the registry's knobs an instructor may turn at runtime, and the owner each one is handed to.

Bounds and units come from the path registry (app/registry.py). Not turnable live (yet): ①'s memory
guard (it measures an inference's memory at start-up), and the box's seconds per review and memory
cap (the supervisor sets them when it starts the server: a CPU quota calibrated then, a memory cgroup).
"""

from pathlib import Path

from app.knobs import Apply, KnobBoard
from app.registry import PATHS, Knob
from app.settings import Settings
from app.strategies.batched import MicroBatcher
from app.strategies.limited import SeatGate
from app.strategies.tickets import TicketService


def knob_board(
    settings: Settings, gate: SeatGate, batcher: MicroBatcher, tickets: TicketService, file: Path | None
) -> KnobBoard:
    """The board for one lab, with the values a previous run left already applied."""
    appliers: dict[str, Apply] = {
        "limited_seats": lambda v: gate.retune(seats=int(v)),
        "limited_max_wait_s": lambda v: gate.retune(max_wait_s=v),
        "batch_window_s": lambda v: batcher.retune(window_s=v),
        "batch_max": lambda v: batcher.retune(max_size=int(v)),
        "batch_max_wait_s": lambda v: batcher.retune(max_wait_s=v),
        "queue_max_jobs": lambda v: tickets.retune(queue_max_jobs=int(v)),
    }
    knobs: list[Knob] = [knob for path in PATHS for knob in path.knobs if knob.setting in appliers]
    table = {knob.setting: (knob, appliers[knob.setting]) for knob in knobs}
    board = KnobBoard(settings, dict(table), file)
    board.restore()
    return board
