"""Which settings an instructor may turn at runtime, their bounds, and the owner each one is handed to.

The box's own knobs (seconds per review, memory cap) are not here: the supervisor sets them when it
starts the server (a CPU quota calibrated at start-up, a memory cgroup), and nothing turns them live yet.
"""

from dataclasses import dataclass
from pathlib import Path

from app.knobs import Apply, KnobBoard
from app.settings import Settings
from app.strategies.batched import MicroBatcher
from app.strategies.limited import SeatGate
from app.strategies.tickets import TicketService


@dataclass(frozen=True, slots=True)
class Knob:
    """A setting an instructor may turn: its `Settings` field, its bounds, its unit."""

    setting: str
    low: float
    high: float
    unit: str  # "s", "reviews", "seats", "jobs"


def knob_board(
    settings: Settings, gate: SeatGate, batcher: MicroBatcher, tickets: TicketService, file: Path | None
) -> KnobBoard:
    """The board for one lab, with the values a previous run left already applied."""
    table: dict[str, tuple[Knob, Apply]] = {
        "limited_seats": (Knob("limited_seats", 0, 50, "seats"), lambda v: gate.retune(seats=int(v))),
        "limited_max_wait_s": (Knob("limited_max_wait_s", 1, 120, "s"), lambda v: gate.retune(max_wait_s=v)),
        "batch_window_s": (Knob("batch_window_s", 0, 1, "s"), lambda v: batcher.retune(window_s=v)),
        "batch_max": (Knob("batch_max", 1, 64, "reviews"), lambda v: batcher.retune(max_size=int(v))),
        "batch_max_wait_s": (Knob("batch_max_wait_s", 0, 120, "s"), lambda v: batcher.retune(max_wait_s=v)),
        "queue_max_jobs": (Knob("queue_max_jobs", 1, 1000, "jobs"), lambda v: tickets.retune(queue_max_jobs=int(v))),
    }
    board = KnobBoard(settings, dict(table), file)
    board.restore()
    return board
