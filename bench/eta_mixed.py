"""Do tickets keep their promises when ② and ③ share the lane? Bursts of 12 at ②, ③ and ④ fired together.

`flock /tmp/lab-cpu.lock python -m bench.eta_mixed [--runs 3] [--out docs/bench/eta-mixed.json]`

Starts the default box (`python -m app.box`, twin model), fires 12 requests at each of ②, ③ and
④ at the same moment (texts made unique so the cache never answers), follows the 12 tickets on
one event stream and records every promise: the 202's ETA, then each event's (`eta_seconds` from
the moment it arrived). A ticket keeps a promise when it is done within max(1.5 s, 25 % of the
promised wait) of the promised moment; the report counts that for each ticket's first and last
promise (docs/tickets.md, "ETA").
"""

import argparse
import asyncio
import json
import os
import time
from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any

import httpx

from app.engine.callshape_cache import cpu_model
from app.scorer import samples_by_length
from app.settings import Settings
from kit.fire import ROUTES, send
from kit.host import load_average
from kit.serverproc import ServerProcess

N = 12
ABS_S, REL = 1.5, 0.25
OTHERS = ("limited", "batched")  # fired beside the tickets, sharing the lane with them


def kept(promise: dict[str, float], done_at: float) -> bool:
    """Done within max(ABS_S, REL x the promised wait) of the promised moment."""
    wait = promise["eta_s"]
    return abs(done_at - (promise["at"] + wait)) <= max(ABS_S, REL * wait)


async def follow(client: httpx.AsyncClient, ids: list[str], t0: float, tickets: dict[str, dict[str, Any]]) -> None:
    query = "&".join(f"job_id={i}" for i in ids)
    async with client.stream("GET", f"/api/queue/events?{query}", timeout=600) as stream:
        async for line in stream.aiter_lines():
            if not line.startswith("data: "):
                continue
            body = json.loads(line[6:])
            job = tickets.get(body.get("job_id", ""))
            if job is None:
                continue
            now = time.time() - t0
            if body.get("eta_seconds") is not None:
                job["promises"].append({"at": round(now, 3), "eta_s": body["eta_seconds"], "status": body["status"]})
            if body.get("status") in ("done", "failed", "expired", "canceled"):
                # The job's own finish (wall clock), not when this stream heard of it.
                job["final"], job["done_at"] = body["status"], round((body.get("finished_at") or t0 + now) - t0, 3)


async def one_run(url: str, texts: list[str], tag: str) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        t0 = time.time()  # wall clock: a finished job says when it finished in Unix time
        tickets: dict[str, dict[str, Any]] = {}

        async def ticket(text: str) -> int | None:
            sent = time.time() - t0
            answer = await send(client, ROUTES["tickets"], {"text": text})
            if answer.response is not None and answer.status == 202:
                body = answer.response.json()
                first = {"at": round(sent, 3), "eta_s": body["eta_seconds"], "status": "queued"}
                tickets[body["job_id"]] = {"promises": [first], "final": None, "done_at": None}
                return None
            return answer.status

        async def other(path: str, text: str) -> int | None:
            return (await send(client, ROUTES[path], {"text": text})).status

        fired: list[Coroutine[Any, Any, int | None]] = [ticket(f"{t} {tag}④{i}") for i, t in enumerate(texts)]
        others = [asyncio.ensure_future(other(p, f"{t} {tag}{p[0]}{i}")) for p in OTHERS for i, t in enumerate(texts)]
        ticket_refusals = [r for r in await asyncio.gather(*fired) if r is not None]
        await follow(client, list(tickets), t0, tickets)  # from the last 202 on, while ② and ③ still run
        statuses: list[int] = [*ticket_refusals, *(r for r in await asyncio.gather(*others) if r is not None)]
    done = {i: t for i, t in tickets.items() if t["final"] == "done"}
    first_kept = sum(kept(t["promises"][0], t["done_at"]) for t in done.values())
    last_kept = sum(kept(t["promises"][-1], t["done_at"]) for t in done.values())
    return {
        "tickets": len(tickets),
        "done": len(done),
        "other_statuses": {str(s): statuses.count(s) for s in sorted(set(statuses))},
        "first_kept": first_kept,
        "last_kept": last_kept,
        "promises_per_ticket": sorted(len(t["promises"]) for t in tickets.values()),
        "detail": list(tickets.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    settings = Settings()
    samples = samples_by_length(settings)
    texts = [samples[(i * 7) % len(samples)] for i in range(N)]
    meta: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": cpu_model(),
        "load_before": load_average(),
        "note": "shared machine: other helpers' builds and tests ran beside it",
    }
    runs = []
    with ServerProcess(settings.resolved_model_dir(), box=True, LAB_JOB_STORE="memory://") as server:
        meta["box"] = httpx.get(f"{server.url}/api/model", timeout=10).json()["box"]["speed"]
        for n in range(args.runs):
            result = asyncio.run(one_run(server.url, texts, f"r{n}-{os.getpid()}"))
            runs.append(result)
            print(json.dumps({k: v for k, v in result.items() if k != "detail"}), flush=True)
    meta["load_after"] = load_average()
    done = sum(r["done"] for r in runs)
    summary = {
        "done": done,
        "first_kept_pct": round(100 * sum(r["first_kept"] for r in runs) / max(done, 1), 1),
        "last_kept_pct": round(100 * sum(r["last_kept"] for r in runs) / max(done, 1), 1),
    }
    print(json.dumps({**meta, **summary}))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({**meta, "summary": summary, "runs": runs}, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
