"""What the box is doing right now: stats, the model, health, and the metrics Prometheus scrapes."""

from dataclasses import asdict
from typing import Any

import psutil
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.deps import get_lab
from app.errors import STORE_UNAVAILABLE, UNHEALTHY, error_body
from app.inside import report
from app.inside.cgroup_memory import memory_now
from app.lab import Lab, LabSnapshot
from app.paths.holds import HoldsSnapshot
from app.paths.limited import SeatGate
from app.paths.ticket_roles import Tickets
from app.paths.tickets import TicketsSnapshot
from app.settings import BoxState

router = APIRouter(tags=["info"])
_process = psutil.Process()


def stats_body(
    snap: LabSnapshot,
    tickets: TicketsSnapshot,
    holds: HoldsSnapshot,
    box: BoxState | None = None,
    speed: dict[str, Any] | None = None,
    stand_in_bytes: int = 0,
) -> dict[str, Any]:
    """The same snapshots the collector turns into metrics, so the page and Grafana agree; `box` from the supervisor,
    `stand_in_bytes` what the lab holds for the seed's libraries."""
    lane, cache, loads = snap.lane, snap.cache, snap.loads
    rss = _process.memory_info().rss
    naive = loads["naive"].in_flight
    return {
        "lane": {
            "busy": lane.busy,
            "current_batch": lane.current_batch,
            "pending_reviews": lane.pending_reviews,
            "completed": lane.completed,
            "failed": lane.failed,
            "skipped": {"gone": lane.skipped_gone, "deadline": lane.skipped_deadline},
            "service_s_per_review": round(lane.per_review_s, 4),
            "busy_s": round(lane.busy_s, 3),
        },
        # The box's one CPU: the lane's inference (②③④) and every ① inference beside it.
        "cpu": {
            "inferences": int(lane.busy) + naive,
            "lane": int(lane.busy),
            "naive": naive,
        },
        "paths": {
            p.name: {"in_flight": loads[p.name].in_flight, "waiting": loads[p.name].waiting, **loads[p.name].details}
            for p in snap.paths
        },
        "jobs": tickets.jobs,
        "store": {"problem": tickets.store_problem},
        "rejections": {p.name: loads[p.name].refusals for p in snap.paths},
        # ②'s held seats: tokens issued, holds that expired unclaimed, what presented tokens got.
        "holds": {"issued": holds.issued, "no_shows": holds.no_shows, **holds.results},
        "cache": {"hits": cache.hits, "misses": cache.misses, "size": cache.size},
        "process": {"rss_bytes": rss},
        # Outside the box nothing caps the server: RSS, no percentage.
        "memory": {
            **memory_now(box.memory_dir if box else None, box.memory_cap_bytes if box else 0, rss, stand_in_bytes),
            **report.stand_in_origin(box),
        },
        "box": report.stats(box, speed),
        # The instructor's live values; pages announce a change when `version` moves (app/knobs/board.py).
        "knobs": {
            "version": snap.knobs.last.version if snap.knobs.last else 0,
            "last": None if snap.knobs.last is None else asdict(snap.knobs.last),
            "values": snap.knobs.values,
        },
    }


@router.get("/api/stats", summary="Live state of the lane, the paths and the process")
async def stats(request: Request) -> dict[str, Any]:
    lab = get_lab(request)
    return await lab_stats(lab)


async def lab_stats(lab: Lab) -> dict[str, Any]:
    """What GET /api/stats and its WebSocket answer, from one set of snapshots."""
    tickets = await lab.path("tickets", Tickets).service.snapshot()  # first: ④'s load is the store's counts as read
    holds = lab.path("limited", SeatGate).holds.snapshot()
    return stats_body(lab.snapshot(), tickets, holds, lab.settings.box_state, lab.speed_now(), lab.stand_in_bytes)


@router.get("/api/model", summary="Which model is served, and how fast it measured")
async def model(request: Request) -> dict[str, Any]:
    lab = get_lab(request)
    manifest = lab.manifest
    return {
        "name": manifest.get("name"),
        "weights": manifest.get("weights"),
        "random_weights": manifest.get("weights") != "real",
        "size_bytes": manifest.get("size_bytes"),
        "sha256": manifest.get("sha256"),
        "source": manifest.get("source"),
        "created": manifest.get("created"),
        "quantization": manifest.get("quantization"),
        "intra_op_threads": lab.settings.intra_op_threads,
        "inter_op_threads": 1,
        # Pairs per onnxruntime call, and the timings that chose it (app/engine/callshape.py); None for a fake scorer.
        "call_shape": manifest.get("call_shape"),
        "box": report.model_info(lab.settings.box_state, manifest.get("box_calibration"), lab.speed_now()),
        "service_s_per_review": round(lab.lane.clock.per_review_s, 4),
        "service_samples": lab.lane.clock.samples,
    }


@router.get("/health", summary="200 when the model is loaded and the lane alive")
async def health(request: Request) -> JSONResponse:
    lab = getattr(request.app.state, "lab", None)
    if lab is None or not lab.healthy:
        body = error_body(
            UNHEALTHY, "The lab is not serving: starting, stopping, or its lane or ticket worker has stopped."
        )
        return JSONResponse({"status": "unhealthy", **body}, status_code=UNHEALTHY.status)
    if (problem := await lab.store.check()) is not None:  # 202s would go nowhere: say so
        body = error_body(STORE_UNAVAILABLE, f"The job store cannot keep tickets: {problem}")
        return JSONResponse({"status": "unhealthy", "store": problem, **body}, status_code=STORE_UNAVAILABLE.status)
    return JSONResponse({"status": "healthy", "weights": lab.manifest.get("weights")})


@router.get("/metrics", include_in_schema=False)
async def prometheus_metrics(request: Request) -> Response:
    """This app's `review_*` metrics plus the process metrics, for Prometheus to scrape.

    Ticket gauges are read from the job store here, at scrape time, not between jobs.
    """
    await request.app.state.collector.refresh()
    return Response(generate_latest(request.app.state.registry), media_type=CONTENT_TYPE_LATEST)
