"""Turns the owners' snapshots into Prometheus metrics at scrape time, on a registry made per app.

Nothing is pushed: each owner counts its own and exposes an immutable `snapshot()`; this
collector reads them when Prometheus scrapes, so no gauge is set from four places and two
apps in one process (tests) never share a number.
"""

from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from app.engine.tally import TallySnapshot
from app.jobs.store import empty_counts
from app.lab import Lab, LabSnapshot
from app.observe.metrics import HELP, RequestTally
from app.paths.batch import BATCH_CLOSE_REASONS, BatcherSnapshot
from app.paths.batched import MicroBatcher
from app.paths.holds import HOLD_RESULTS, HoldsSnapshot
from app.paths.limited import SeatGate
from app.paths.ticket_roles import Tickets
from app.paths.tickets import TicketsSnapshot


def histogram(name: str, labels: list[str], tallies: dict[tuple[str, ...], TallySnapshot]) -> HistogramMetricFamily:
    """Buckets labelled `le` as prometheus_client writes them (`1.0`, `0.005`), so dashboards match."""
    family = HistogramMetricFamily(name, HELP[name], labels=labels)
    for values, tally in tallies.items():
        buckets = [(repr(float(b)), float(c)) for b, c in zip(tally.bounds, tally.cumulative, strict=True)]
        family.add_metric(list(values), [*buckets, ("+Inf", float(tally.count))], sum_value=tally.total)
    return family


def labelled(family: GaugeMetricFamily | CounterMetricFamily, rows: Iterable[tuple[tuple[str, ...], float]]) -> Metric:
    for values, value in rows:
        family.add_metric(list(values), value)
    return family


class LabCollector(Collector):
    """`refresh()` reads the store (async) before a scrape; everything else is read inside `collect`."""

    def __init__(self, lab: Callable[[], Lab | None]) -> None:
        self._lab = lab
        self.requests = RequestTally()  # counted by LabMiddleware, the one place that sees every answer
        self._tickets = TicketsSnapshot(empty_counts(), {"job_queue_full": 0}, None)

    async def refresh(self) -> None:
        lab = self._lab()
        if lab is not None:
            self._tickets = await lab.path("tickets", Tickets).service.snapshot()

    def collect(self) -> Iterable[Metric]:
        lab = self._lab()
        snap = lab.snapshot() if lab is not None else None
        answered = self.requests.snapshot()
        born = {(p.name, str(s)): 0 for p in snap.paths for s in p.statuses} if snap is not None else {}
        requests = CounterMetricFamily("review_requests", HELP["review_requests"], labels=["path", "status"])
        yield labelled(requests, sorted((born | answered).items()))
        if lab is not None and snap is not None:  # with ②'s held seats and ③'s batches, read from their owners
            batched = lab.path("batched", MicroBatcher).snapshot()
            yield from self.families(snap, self._tickets, batched, lab.path("limited", SeatGate).holds.snapshot())

    @staticmethod
    def families(
        snap: LabSnapshot, tickets: TicketsSnapshot, batched: BatcherSnapshot, holds: HoldsSnapshot
    ) -> Iterable[Metric]:
        names = [p.name for p in snap.paths]
        loads = snap.loads
        yield labelled(
            GaugeMetricFamily("review_in_flight", HELP["review_in_flight"], labels=["path"]),
            (((p,), loads[p].in_flight) for p in names),
        )
        yield labelled(
            GaugeMetricFamily("review_waiting", HELP["review_waiting"], labels=["path"]),
            (((p,), loads[p].waiting) for p in names),
        )
        yield labelled(  # each path's own fixed set of names (its Load.details): bounded labels
            GaugeMetricFamily("review_path_state", HELP["review_path_state"], labels=["path", "name"]),
            (((p, name), value) for p in names for name, value in loads[p].details.items()),
        )
        yield labelled(
            CounterMetricFamily("review_rejections", HELP["review_rejections"], labels=["path", "reason"]),
            (((p.name, r), loads[p.name].refusals.get(r, 0)) for p in snap.paths for r in p.refusals),
        )
        yield labelled(
            CounterMetricFamily("review_knob_changes", HELP["review_knob_changes"], labels=["knob"]),
            (((k,), n) for k, n in snap.knobs.changes.items()),
        )
        yield labelled(
            GaugeMetricFamily("review_knob_value", HELP["review_knob_value"], labels=["knob"]),
            (((k,), v) for k, v in snap.knobs.values.items()),
        )
        yield GaugeMetricFamily("review_seat_holds", HELP["review_seat_holds"], value=holds.live)
        yield CounterMetricFamily("review_seat_holds_issued", HELP["review_seat_holds_issued"], value=holds.issued)
        yield CounterMetricFamily("review_seat_hold_no_shows", HELP["review_seat_hold_no_shows"], value=holds.no_shows)
        yield labelled(
            CounterMetricFamily("review_seat_hold_results", HELP["review_seat_hold_results"], labels=["result"]),
            (((r,), holds.results.get(r, 0)) for r in HOLD_RESULTS),
        )
        pipeline = snap.pipeline
        yield histogram("review_wait_seconds", ["path"], {(p,): pipeline.wait(p) for p in names})
        yield histogram("review_inference_seconds", ["path"], {(p,): pipeline.inference(p) for p in names})
        yield histogram("review_batch_size", [], {(): batched.sizes})
        yield labelled(
            CounterMetricFamily("review_batches", HELP["review_batches"], labels=["reason"]),
            (((r,), batched.closed.get(r, 0)) for r in BATCH_CLOSE_REASONS),
        )
        yield labelled(
            GaugeMetricFamily("review_jobs", HELP["review_jobs"], labels=["status"]),
            (((status,), count) for status, count in tickets.jobs.items()),
        )
        yield labelled(
            CounterMetricFamily("review_cache_hits", HELP["review_cache_hits"], labels=["path"]),
            (((p,), snap.cache.hits_by_path.get(p, 0)) for p in names),
        )
        lane = snap.lane
        yield GaugeMetricFamily("review_lane_busy", HELP["review_lane_busy"], value=1 if lane.busy else 0)
        yield CounterMetricFamily("review_lane_busy_seconds", HELP["review_lane_busy_seconds"], value=lane.busy_s)
        skipped = {"gone": lane.skipped_gone + batched.skipped_gone, "deadline": lane.skipped_deadline}
        yield labelled(
            CounterMetricFamily("review_lane_skipped", HELP["review_lane_skipped"], labels=["reason"]),
            (((r,), n) for r, n in skipped.items()),
        )
        yield labelled(
            CounterMetricFamily("review_client_gone", HELP["review_client_gone"], labels=["path"]),
            (((p,), pipeline.client_gone(p)) for p in names),
        )


def lab_registry(lab: Callable[[], Lab | None]) -> tuple[CollectorRegistry, LabCollector]:
    """A registry of this app's own: the lab's metrics plus the process metrics Prometheus expects."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    collector = LabCollector(lab)
    registry.register(collector)
    return registry, collector
