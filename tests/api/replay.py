"""A fixed walk over every route, recorded as statuses, the headers students read, and bodies with
volatile fields (ids, timings, epochs) normalised. `test_replay.py` compares today's app to the
recording made on 908157e, before the path contract, the collector and the error table.

Record again (only on purpose): `python -m tests.api.replay tests/api/replay_908157e.json`.
"""

import asyncio
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx
from asgi_lifespan import LifespanManager

from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer

HEADERS = (
    "content-type",
    "retry-after",
    "x-cache",
    "x-batch-size",
    "location",
    "server-timing",
    "allow",
    "idempotent-replayed",
    "cache-control",
)
VOLATILE = {
    "job_id",
    "wait_ms",
    "inference_ms",
    "waited_ms",
    "eta_seconds",
    "enqueued_at",
    "started_at",
    "finished_at",
    "expires_at",
    "rss_bytes",
    "service_s_per_review",
    "busy_s",
}
HEX_ID = re.compile(r"[0-9a-f]{32}")
JSON = {"content-type": "application/json"}
Step = tuple[str, str, str, dict[str, Any]]  # name, method, url ("{job}" = the last ticket), request kwargs

STEPS: list[Step] = [
    ("health", "GET", "/health", {}),
    ("model", "GET", "/api/model", {}),
    ("samples", "GET", "/api/samples", {}),
    ("page", "GET", "/", {}),
    ("docs", "GET", "/api/docs", {}),
    ("static", "GET", "/static/burst.css", {}),
    ("naive miss", "POST", "/api/naive/predict", {"json": {"text": "빵이 맛있어요"}}),
    ("naive hit", "POST", "/api/naive/predict", {"json": {"text": "  빵이 맛있어요 "}}),
    ("limited miss", "POST", "/api/limited/predict", {"json": {"text": "줄이 길어요"}}),
    ("limited hit", "POST", "/api/limited/predict", {"json": {"text": "빵이 맛있어요"}}),
    ("batched miss", "POST", "/api/batched/predict", {"json": {"text": "배송이 늦어요"}}),
    ("batched hit", "POST", "/api/batched/predict", {"json": {"text": "배송이 늦어요"}}),
    ("ticket", "POST", "/api/queue/jobs", {"json": {"text": "직원이 친절해요"}}),
    ("ticket done", "WAIT", "/api/queue/jobs/{job}", {}),
    ("ticket events", "GET", "/api/queue/jobs/{job}/events", {}),
    ("many events", "GET", "/api/queue/events?job_id={job}&job_id=nope", {}),
    ("cancel finished", "DELETE", "/api/queue/jobs/{job}", {}),
    ("ticket cached", "POST", "/api/queue/jobs", {"json": {"text": "빵이 맛있어요"}}),
    ("keyed", "POST", "/api/queue/jobs", {"json": {"text": "열쇠 리뷰"}, "headers": {"Idempotency-Key": "k1"}}),
    ("keyed done", "WAIT", "/api/queue/jobs/{job}", {}),
    ("keyed replay", "POST", "/api/queue/jobs", {"json": {"text": "열쇠 리뷰"}, "headers": {"Idempotency-Key": "k1"}}),
    (
        "keyed other body",
        "POST",
        "/api/queue/jobs",
        {"json": {"text": "다른 리뷰"}, "headers": {"Idempotency-Key": "k1"}},
    ),
    ("queue time out of bounds", "POST", "/api/queue/jobs", {"json": {"text": "곧", "max_time_in_queue_s": 0}}),
    ("webhooks off", "POST", "/api/queue/jobs", {"json": {"text": "훅", "webhook_url": "https://example.com/h"}}),
    ("unknown job", "GET", "/api/queue/jobs/nope", {}),
    ("cancel unknown", "DELETE", "/api/queue/jobs/nope", {}),
    ("events unknown", "GET", "/api/queue/jobs/nope/events", {}),
    ("many events none", "GET", "/api/queue/events?job_id=nope", {}),
    ("many events no id", "GET", "/api/queue/events", {}),
    ("missing text", "POST", "/api/limited/predict", {"content": b"{}", "headers": JSON}),
    ("blank text", "POST", "/api/naive/predict", {"json": {"text": "   "}}),
    ("overlong text", "POST", "/api/batched/predict", {"json": {"text": "가" * 2001}}),
    ("extra field", "POST", "/api/queue/jobs", {"json": {"text": "좋아요", "extra": 1}}),
    ("text not a string", "POST", "/api/limited/predict", {"json": {"text": 123}}),
    ("broken json", "POST", "/api/limited/predict", {"content": b'{"text": ', "headers": JSON}),
    ("not utf-8", "POST", "/api/naive/predict", {"content": b"0\x0f\x02C\xff\xfeK\x1d", "headers": JSON}),
    ("over the cap", "POST", "/api/limited/predict", {"content": b"x" * 20_000, "headers": JSON}),
    ("no such route", "GET", "/nope", {}),
    ("wrong method", "GET", "/api/limited/predict", {}),
    ("wrong method on a ticket", "PUT", "/api/queue/jobs/nope", {}),
    ("stats", "GET", "/api/stats", {}),
    ("metrics", "GET", "/metrics", {}),
    ("openapi", "GET", "/api/openapi.json", {}),
]


def normalised(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: normalised(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalised(v) for v in value]
    if key in VOLATILE and value is not None:
        return f"<{key}>"
    if isinstance(value, str):
        return HEX_ID.sub("<id>", value)
    return value


def summary(name: str, response: httpx.Response) -> Any:
    """What is compared: bodies whole, except the big or volatile documents, kept as their outline."""
    text = response.text
    if name == "samples":
        return {"count": len(response.json()), "first": response.json()[0]}
    if name in ("page", "docs", "static"):
        return None  # status and headers only: the page, its assets and the docs page have their own tests
    if name == "metrics":
        names = {line.split(" ")[0] for line in text.splitlines() if line.startswith("review_")}
        # `*_created` are prometheus_client's own timestamps per series; no dashboard reads them.
        return sorted(n for n in names if not n.split("{")[0].endswith("_created"))
    if name == "openapi":
        return sorted(f"{m.upper()} {p}" for p, ops in response.json()["paths"].items() for m in ops)
    if name.endswith("events") and response.headers.get("content-type", "").startswith("text/event-stream"):
        events = [block for block in text.split("\n\n") if block]
        return [
            json.loads(line[6:]) if line.startswith("data: ") else line
            for block in events
            for line in block.split("\n")
        ]
    try:
        return response.json()
    except ValueError:
        return text


async def walk(client: httpx.AsyncClient) -> dict[str, Any]:
    recorded: dict[str, Any] = {}
    job = ""
    for name, method, url, kwargs in STEPS:
        url = url.replace("{job}", job)
        if method == "WAIT":  # poll the lab in-process until the ticket ends (a bounded wait, not a delay)
            async with asyncio.timeout(10):
                while (response := await client.get(url)).json()["status"] in ("queued", "running"):  # noqa: ASYNC110
                    await asyncio.sleep(0.001)
        else:
            response = await client.request(method, url, **kwargs)
        if name in ("ticket", "keyed"):
            job = response.json()["job_id"]
        headers = {h: HEX_ID.sub("<id>", response.headers[h]) for h in HEADERS if h in response.headers}
        if "server-timing" in headers:
            headers["server-timing"] = re.sub(r"dur=[0-9.]+", "dur=<ms>", headers["server-timing"])
        recorded[name] = {
            "status": response.status_code,
            "headers": headers,
            "body": normalised(summary(name, response)),
        }
    return recorded


async def record(data_dir: Path) -> dict[str, Any]:
    """The walk against a fresh lab with a fake scorer that answers at once."""
    settings = Settings(warmup=False, batch_window_s=0.001, job_store=f"sqlite:///{data_dir / 'jobs.db'}")
    app = create_app(settings, GatedScorer(gated=False))
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lab", timeout=30) as client:
            return await walk(client)


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="lab-replay-") as folder:
        result = asyncio.run(record(Path(folder)))
    Path(sys.argv[1]).write_text(json.dumps(result, ensure_ascii=False, indent=1, sort_keys=True) + "\n")
