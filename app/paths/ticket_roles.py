"""Path 4 as the lab holds it: its three roles sharing one store, one change signal and this box's running job."""

from dataclasses import dataclass

from app.paths.parts import Parts
from app.paths.registry import Load, PathSpec
from app.paths.ticket_config import ticket_configs
from app.paths.ticket_follow import TicketFollower
from app.paths.ticket_state import LocalRun, Signals
from app.paths.ticket_worker import TicketWorker
from app.paths.tickets import SPEC, TicketService


@dataclass(frozen=True, slots=True)
class Tickets:
    """The service takes and answers tickets, the worker runs them on the lane, the follower streams their news."""

    service: TicketService
    worker: TicketWorker
    follower: TicketFollower
    spec: PathSpec = SPEC

    def load(self) -> Load:
        return self.service.load()

    def retune(self, *, queue_max_jobs: int) -> None:
        self.service.retune(queue_max_jobs=queue_max_jobs)

    def start(self) -> None:
        self.worker.start()

    @property
    def alive(self) -> bool:
        return self.worker.alive

    def drain(self) -> None:
        """SIGTERM: claim no more tickets."""
        self.worker.drain()

    async def stop(self) -> None:
        await self.worker.stop()


def build(parts: Parts) -> Tickets:
    """The one place Settings become the ticket roles' small configs; the lab starts the worker (`start`)."""
    service_cfg, worker_cfg, follow_cfg = ticket_configs(parts.settings)
    store, lane, pipeline = parts.store, parts.lane, parts.pipeline
    signals, local = Signals(store, follow_cfg.poll_s), LocalRun()
    lane.room.on_change(signals.watch.notify)  # ② and ③ move tickets' ETAs: followers look again
    service = TicketService(store, lane.room, pipeline, service_cfg, signals, local)
    worker = TicketWorker(store, lane, pipeline, worker_cfg, signals, local, parts.webhooks)
    return Tickets(service, worker, TicketFollower(service, signals, follow_cfg))
