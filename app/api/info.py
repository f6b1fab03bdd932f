"""What the box is doing right now: stats, the model, health."""

from typing import Any

import psutil
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app import metrics
from app.api.deps import get_lab
from app.box import report

router = APIRouter(tags=["info"])
_process = psutil.Process()


@router.get("/api/stats", summary="Live state of the lane, the paths and the process")
async def stats(request: Request) -> dict[str, Any]:
    lab = get_lab(request)
    lane, limited, batcher = lab.lane, lab.limited, lab.batcher
    jobs = await lab.store.counts()
    return {
        "lane": {
            "busy": lane.busy,
            "current_batch": lane.current_batch,
            "pending_reviews": lane.pending_reviews,
            "completed": lane.completed,
            "failed": lane.failed,
            "skipped": {"gone": lane.skipped_gone, "deadline": lane.skipped_deadline},
            "service_s_per_review": round(lane.clock.per_review_s, 4),
        },
        "paths": {
            "naive": {"in_flight": lab.naive.in_flight, "waiting": 0},
            "limited": {
                "in_flight": limited.in_flight,
                "waiting": limited.waiting,
                "seats_taken": limited.admitted,
                "capacity": limited.capacity,
            },
            "batched": {
                "in_flight": batcher.in_flight,
                "waiting": batcher.waiting,
                "last_batch": batcher.last_batch_size,
                "skipped_gone": batcher.skipped_gone,
            },
            "tickets": {"in_flight": jobs.get("running", 0), "waiting": jobs.get("queued", 0)},
        },
        "jobs": jobs,
        "rejections": rejection_counts(),
        "cache": {"hits": lab.cache.hits, "misses": lab.cache.misses, "size": len(lab.cache)},
        "process": {"rss_bytes": _process.memory_info().rss},
        "box": report.stats(lab.settings.box_state),
    }


def rejection_counts() -> dict[str, dict[str, int]]:
    """Read back from the Prometheus counter, so the page and Grafana agree."""
    counts: dict[str, dict[str, int]] = {}
    for metric in metrics.REJECTIONS.collect():
        for sample in metric.samples:
            if sample.name.endswith("_total"):
                path, reason = sample.labels["path"], sample.labels["reason"]
                counts.setdefault(path, {})[reason] = int(sample.value)
    return counts


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
        "box": report.model_info(lab.settings.box_state, manifest.get("box_calibration")),
        "service_s_per_review": round(lab.lane.clock.per_review_s, 4),
        "service_samples": lab.lane.clock.samples,
    }


@router.get("/health", summary="200 when the model is loaded and the lane alive")
async def health(request: Request) -> JSONResponse:
    lab = getattr(request.app.state, "lab", None)
    if lab is None or not lab.healthy:
        return JSONResponse({"status": "unhealthy"}, status_code=503)
    return JSONResponse({"status": "healthy", "weights": lab.manifest.get("weights")})


@router.get("/metrics", include_in_schema=False)
async def prometheus_metrics(request: Request) -> Response:
    """The `review_*` metrics plus the default process metrics, for Prometheus to scrape.

    Ticket gauges are read from the job store at scrape time (see `TicketService.publish_metrics`).
    """
    lab = getattr(request.app.state, "lab", None)
    if lab is not None:
        await lab.tickets.publish_metrics()
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
