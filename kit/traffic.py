"""Bursts on every path, sized so that every `review_*` metric gets real data.

Run against a lab started with `BURST_SETTINGS`: the tiny model slowed by CPU burning to about 0.4 s per review
with few seats and a short queue, so refusals of every reason really happen.
"""

import asyncio
from collections import Counter
from dataclasses import dataclass, field

import httpx

from app.paths.registry import PATHS
from kit.fire import BurstReply, fire_one
from kit.live import slowed

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
    # ⑤: a newcomer may wait 2 reviews (0.8 s) while the queue drains: a burst of 6 is refused from about its 4th.
    "LAB_ADAPTIVE_INTERVAL_REVIEWS": "2",
    "LAB_ADAPTIVE_TARGET_REVIEWS": "1",
}


# A burst per path, sized to overflow its bound under BURST_SETTINGS (per-path scenario data, like the
# page's notes: tests/test_layout.py allows this table).
BURST_SIZES = {"naive": 3, "limited": 8, "batched": 4, "tickets": 6, "adaptive": 6}
# A path not sized here (a new one) gets a burst of 6: every series it exports gets data without an edit here.
DEFAULT_BURST = 6


def burst_size(path: str) -> int:
    return BURST_SIZES.get(path, DEFAULT_BURST)


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

    def record(self, path: str, reply: BurstReply) -> None:
        self.statuses.setdefault(path, Counter())[reply.status] += 1
        if reply.cache_hit:
            self.cache_hits[path] += 1
        if reply.batch_size is not None:
            self.batch_sizes.append(reply.batch_size)
        if reply.final not in (None, "done"):
            raise RuntimeError(f"a ticket ended {reply.final}")
        self.jobs_done += reply.final == "done"


async def fire_bursts(base_url: str, tag: str = "") -> BurstReport:
    """One burst per path, one after the other so they do not share the lane, then repeats for cache hits.

    `tag` makes the texts new (a second run in the same server would otherwise be all cache hits).
    """
    report = BurstReport()
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        for path in (p.name for p in PATHS):
            texts = [f"{tag}{path} 리뷰 {i}: 배송은 빨랐지만 포장이 아쉬워요" for i in range(burst_size(path))]
            replies = await asyncio.gather(*(fire_one(client, path, text) for text in texts))
            for reply in replies:
                report.record(path, reply)
            if path == "batched":  # alone on an idle lane: its batch goes when the window ends
                report.record(path, await fire_one(client, path, f"{tag}혼자 온 리뷰"))
            answered = [text for text, r in zip(texts, replies, strict=True) if r.status in (200, 202)]
            # The same review again: answered from the cache, on the same path.
            report.record(path, await fire_one(client, path, answered[0]))
    return report
