"""Bursts on every path, sized so that every `review_*` metric gets real data.

Run against a lab started with `BURST_SETTINGS`: the tiny model slowed by CPU burning to about 0.4 s per review
with few seats and a short queue, so refusals of every reason really happen.
"""

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

from app.bench.live import slowed

# Slow enough that a burst fills ② and ④, fast enough that the whole run takes seconds.
BURST_SETTINGS = {
    **slowed(0.4),
    # ②: 1 in flight + 2 seats; the 2nd seat-holder's turn comes >= 0.8 s after the first
    # arrival, past its 0.5 s limit if it arrived within 0.3 s of the first: a 503.
    "LAB_LIMITED_SEATS": "2",
    "LAB_LIMITED_MAX_WAIT_S": "0.5",
    # ③: 4 arrivals close one batch of 3 as "full"; the 4th waits for the lane and goes
    # when it frees ("lane_free"); a lone review on the idle lane then goes by "timer".
    "LAB_BATCH_MAX": "3",
    "LAB_BATCH_WINDOW_S": "0.5",
    # ④: 2 queued tickets at most; a burst of 6 overflows it.
    "LAB_QUEUE_MAX_JOBS": "2",
}


@dataclass
class BurstReport:
    """HTTP statuses and cache answers per path, as the clients saw them."""

    statuses: dict[str, Counter[int]] = field(default_factory=dict)
    cache_hits: Counter[str] = field(default_factory=Counter)
    batch_sizes: list[int] = field(default_factory=list)
    jobs_done: int = 0

    @property
    def answered(self) -> int:
        """Every answer the clients got: what `sum(review_requests_total)` must reach."""
        return sum(sum(counter.values()) for counter in self.statuses.values())

    def record(self, path: str, response: httpx.Response) -> None:
        self.statuses.setdefault(path, Counter())[response.status_code] += 1
        if response.headers.get("X-Cache") == "hit":
            self.cache_hits[path] += 1
        if "X-Batch-Size" in response.headers:
            self.batch_sizes.append(int(response.headers["X-Batch-Size"]))


async def burst(client: httpx.AsyncClient, url: str, texts: list[str]) -> list[httpx.Response]:
    return await asyncio.gather(*(client.post(url, json={"text": text}) for text in texts))


async def wait_jobs_done(client: httpx.AsyncClient, locations: list[str], limit_s: float = 30.0) -> None:
    """Poll the tickets (the worker lives in the server process) until each is done."""
    deadline = time.monotonic() + limit_s
    pending = list(locations)
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} tickets never finished")
        statuses = [(await client.get(location)).json()["status"] for location in pending]
        if "failed" in statuses:
            raise RuntimeError("a ticket failed")
        pending = [location for location, status in zip(pending, statuses, strict=True) if status != "done"]
        if pending:
            await asyncio.sleep(0.05)


async def fire_bursts(base_url: str, tag: str = "") -> BurstReport:
    """One burst per path, one after the other so they do not share the lane, then repeats for cache hits.

    `tag` makes the texts new (a second run in the same server would otherwise be all cache hits).
    """
    report = BurstReport()
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        plan = {"naive": ("/api/naive/predict", 3), "limited": ("/api/limited/predict", 8)}
        plan |= {"batched": ("/api/batched/predict", 4), "tickets": ("/api/queue/jobs", 6)}
        for path, (url, size) in plan.items():
            texts = [f"{tag}{path} 리뷰 {i}: 배송은 빨랐지만 포장이 아쉬워요" for i in range(size)]
            responses = await burst(client, url, texts)
            for response in responses:
                report.record(path, response)
            if path == "tickets":
                accepted = [r.headers["Location"] for r in responses if r.status_code == 202]
                await wait_jobs_done(client, accepted)
                report.jobs_done = len(accepted)
            if path == "batched":  # alone on an idle lane: its batch goes when the window ends
                report.record(path, await client.post(url, json={"text": f"{tag}혼자 온 리뷰"}))
            answered = [text for text, r in zip(texts, responses, strict=True) if r.status_code in (200, 202)]
            # The same review again: answered from the cache, on the same path.
            report.record(path, await client.post(url, json={"text": answered[0]}))
    return report
