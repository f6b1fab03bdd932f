"""`just load`: open- or closed-loop load at one path, every request accounted for.

Open loop sends at a fixed rate whether or not earlier requests finished, so queueing
delay shows up in latency instead of slowing the sender (latency runs from the moment a
request was due, not from when the client got round to it). Closed loop runs N clients
that each wait for their answer (and, after a 429/503, for its Retry-After) before the
next. Tickets are followed to a terminal state. Every request ends in exactly one
category, and sent = the sum of the categories. Client-side tooling: the server never
imports this.
"""

import argparse
import asyncio
import json
import math
import random
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.settings import Settings
from kit.fire import ROUTES, follow, send

TICKET_POLL_S = 0.25


@dataclass
class Fate:
    """One request's fate. Times are seconds from the start of the run."""

    due_at: float  # when the request was due to be sent (open loop) or was sent (closed loop)
    latency_s: float  # due → final answer (for tickets: → terminal state seen)
    category: str
    status: int = 0  # HTTP status of the (submitting) request; 0 = no answer
    retry: bool = False  # a second try after Retry-After
    retry_after_s: float | None = None
    wait_ms: float | None = None
    infer_ms: float | None = None
    batch_size: int | None = None
    eta_s: float | None = None  # tickets: the ETA promised at submission
    actual_s: float | None = None  # tickets: enqueued → finished, from the job's own timings
    detail: str | None = None
    hold_token: str | None = None  # ② 429: the Seat-Hold given (sent back on the retry)
    hold_result: str | None = None  # ② retry: the Seat-Hold-Result (seated, expired, ...)
    text: str | None = None  # the review sent: what its answer was worth (kit/work.py weighs it by its cost)


@dataclass
class LoadConfig:
    url: str
    path: str
    mode: str  # "open" or "closed"
    rate: float = 0.0  # open loop: requests per second, or
    burst: int = 0  # open loop: this many at once every `every_s`
    every_s: float = 10.0
    concurrency: int = 0  # closed loop: clients
    duration_s: float = 10.0
    drain_s: float = 120.0  # after the sending window, how long to wait for answers
    retry_once: bool = False  # after a 429/503 with Retry-After, wait it out and try once more
    text_chars: int = 0  # 0: sample reviews; N: reviews padded to N characters
    follow_tickets: bool = True  # False: a 202 is the end of it (to pile up a queue)
    # Same seed, same texts in the same order: servers compared side by side get the same work
    # (sample reviews cost 0.34-2.19 s each on one core). None: a fresh draw every run.
    seed: int | None = None
    poisson: bool = False  # open loop at `rate`: exponential gaps (seeded) instead of even spacing
    timeout_s: float = 0.0  # a client gives up after this long (0: when the run's drain ends)
    # A peer with a rerank API (Infinity): the review is the query, these the documents.
    rerank_documents: list[str] | None = None
    # Long reviews mixed in at this share (0: none), each `long_chars` long: a promise must hold for them too.
    long_share: float = 0.0
    long_chars: int = 2000


@dataclass
class LoadResult:
    config: LoadConfig
    started: str
    outcomes: list[Fate]
    server_before: dict[str, Any] = field(default_factory=dict)
    server_after: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0

    def summary(self) -> dict[str, Any]:
        return summarize(self)


def category_of(status: int) -> str:
    if 200 <= status < 300:
        return "ok"
    if status in (429, 503):
        return f"rejected_{status}"
    return "other_status"


class TextSource:
    """Unique review texts (sample reviews, a run nonce and a serial), so the result cache never answers.

    With a seed the sequence is the same every time, so two servers can be given the same work.
    With `long_share`, that share of the texts are long reviews: sample reviews joined until `long_chars`,
    drawn from a generator of their own, so the short reviews are the same ones, in the same order, as
    without the mix (the long ones come in between).
    """

    def __init__(self, chars: int, seed: int | None = None, *, long_share: float = 0.0, long_chars: int = 2000) -> None:
        samples = [str(s["text"]) for s in json.loads(Settings().samples_file.read_text(encoding="utf-8"))]
        self._samples = samples
        self._chars = chars
        self._random = random.Random(seed)
        self._nonce = f"{self._random.randrange(16**6):06x}"
        self._serial = 0
        self._long_share = long_share
        self._long_chars = long_chars
        self._long = random.Random(None if seed is None else f"long reviews {seed}")

    def next(self) -> str:
        if self._long_share > 0 and self._long.random() < self._long_share:
            return self.long()
        return self.short()

    def _tag(self) -> str:
        self._serial += 1
        return f" #{self._nonce}-{self._serial}"

    def short(self) -> str:
        """A sample review (padded to `chars` if set), tagged."""
        tag = self._tag()
        text = self._random.choice(self._samples)
        if self._chars:
            text = self._joined(text, self._chars, self._random)[: self._chars - len(tag)]
        return text + tag

    def long(self) -> str:
        """Sample reviews joined to exactly `long_chars` characters, the tag included."""
        tag = self._tag()
        text = self._joined(self._long.choice(self._samples), self._long_chars, self._long)
        return text[: self._long_chars - len(tag)] + tag

    def _joined(self, text: str, chars: int, draw: random.Random) -> str:
        while len(text) < chars:
            text += " " + draw.choice(self._samples)
        return text


class Runner:
    """Sends requests and turns each into exactly one Fate: the stream entry point over kit/fire.py's
    request-sending core (a closed burst is the other, `fire.fire_burst`)."""

    def __init__(self, config: LoadConfig, client: httpx.AsyncClient) -> None:
        self.config = config
        self.client = client
        self.texts = TextSource(
            config.text_chars, config.seed, long_share=config.long_share, long_chars=config.long_chars
        )
        self.outcomes: list[Fate] = []
        self.sent = 0
        self.t0 = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.t0

    @property
    def url_path(self) -> str:
        return ROUTES.get(self.config.path, self.config.path)

    async def one(self, due_at: float, *, retry: bool = False, hold: str | None = None) -> Fate:
        """One request from due time to final answer; never raises. `hold`: a Seat-Hold token to present."""
        self.sent += 1
        text = self.texts.next()
        body: dict[str, Any] = {"text": text}
        if self.config.rerank_documents is not None:
            body = {
                "model": "twin",
                "query": text,
                "documents": self.config.rerank_documents,
                "return_documents": False,
            }
        answer = await send(self.client, self.url_path, body, {"Seat-Hold": hold} if hold else None)
        if answer.response is None:
            category = answer.error or "transport_error"
            lost = Fate(due_at, self.now() - due_at, category, retry=retry, detail=answer.detail, text=text)
            return self._record(lost)
        outcome = Fate(due_at, self.now() - due_at, category_of(answer.status), answer.status, retry, text=text)
        outcome.retry_after_s = answer.retry_after_s
        outcome.hold_token = answer.header("Seat-Hold")
        outcome.hold_result = answer.header("Seat-Hold-Result")
        if outcome.category == "ok":
            timing = answer.timing_ms
            outcome.wait_ms, outcome.infer_ms = timing.get("wait"), timing.get("infer")
            outcome.batch_size = answer.batch_size
            if answer.status == 202 and answer.header("Location") and self.config.follow_tickets:
                await self._follow_ticket(answer.response, outcome)
        elif outcome.category == "other_status":
            outcome.detail = answer.response.text[:200]
        return self._record(outcome)

    async def _follow_ticket(self, submitted: httpx.Response, outcome: Fate) -> None:
        """Poll the ticket (first at its ETA) until it is neither queued nor running, or the drain ends."""
        outcome.eta_s = submitted.json().get("eta_seconds")
        first_after_s = max(float(outcome.eta_s or 0.0) - 0.1, TICKET_POLL_S)
        deadline = self.t0 + self.config.duration_s + self.config.drain_s
        end = await follow(
            self.client, submitted, first_after_s=first_after_s, every_s=TICKET_POLL_S, deadline=deadline
        )
        outcome.category = "ok" if end.status == "done" else f"ticket_{end.status}"
        outcome.detail = end.detail
        if end.response is None and end.status != "poll_error":
            return  # it had ended by the time it was answered: nothing was polled
        if end.status not in ("poll_error", "unfinished") and end.job.get("waited_ms") is not None:
            outcome.wait_ms = float(end.job["waited_ms"])
            outcome.infer_ms = float(end.job.get("inference_ms") or 0.0)
            outcome.actual_s = (outcome.wait_ms + outcome.infer_ms) / 1000
        outcome.latency_s = self.now() - outcome.due_at

    def _record(self, outcome: Fate) -> Fate:
        self.outcomes.append(outcome)
        return outcome

    async def with_retry(self, due_at: float) -> None:
        first = await self.one(due_at)
        if self.config.retry_once and first.category.startswith("rejected") and first.retry_after_s is not None:
            await asyncio.sleep(first.retry_after_s)
            await self.one(self.now(), retry=True, hold=first.hold_token)

    def schedule(self) -> list[float]:
        """When each request is due: evenly spaced at `rate`, or `burst` at a time every `every_s`."""
        config = self.config
        if config.burst:
            waves = max(1, math.ceil(config.duration_s / config.every_s))
            return [wave * config.every_s for wave in range(waves) for _ in range(config.burst)]
        if config.poisson:
            gaps, due = random.Random(config.seed), 0.0
            times = []
            while (due := due + gaps.expovariate(config.rate)) < config.duration_s:
                times.append(due)
            return times
        return [i / config.rate for i in range(math.floor(config.duration_s * config.rate))]

    async def open_loop(self) -> None:
        tasks: list[asyncio.Task[None]] = []
        for due in self.schedule():
            delay = due - self.now()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self.with_retry(due)))
        await self._drain(tasks)

    async def closed_loop(self) -> None:
        async def client() -> None:
            while self.now() < self.config.duration_s:
                outcome = await self.one(self.now())
                if outcome.category.startswith("rejected") and outcome.retry_after_s is not None:
                    await asyncio.sleep(outcome.retry_after_s)  # obey the hint instead of hammering
                elif outcome.status == 0:
                    await asyncio.sleep(1.0)  # the server is gone or choking: do not spin

        await self._drain([asyncio.create_task(client()) for _ in range(self.config.concurrency)])

    async def _drain(self, tasks: list[asyncio.Task[None]]) -> None:
        remaining = self.config.duration_s + self.config.drain_s - self.now()
        _, pending = await asyncio.wait(tasks, timeout=max(remaining, 1.0)) if tasks else (set(), set())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        # A request cancelled mid-flight produced no Fate: count it, so sent still adds up.
        for _ in range(self.sent - len(self.outcomes)):
            self.outcomes.append(Fate(self.config.duration_s + self.config.drain_s, 0.0, "client_gave_up"))


async def server_state(client: httpx.AsyncClient) -> dict[str, Any]:
    try:
        stats = (await client.get("/api/stats")).json()
        model = (await client.get("/api/model")).json()
    except (httpx.HTTPError, ValueError) as exc:
        return {"error": repr(exc)}
    return {"stats": stats, "service_s_per_review": model.get("service_s_per_review")}


async def run_load(config: LoadConfig, transport: httpx.AsyncBaseTransport | None = None) -> LoadResult:
    """Run one load; `transport` lets a test drive an in-process app instead of a socket."""
    limits = httpx.Limits(max_connections=2000, max_keepalive_connections=500)
    timeout = httpx.Timeout(config.timeout_s or config.duration_s + config.drain_s, connect=30.0)
    async with httpx.AsyncClient(base_url=config.url, limits=limits, timeout=timeout, transport=transport) as client:
        before = await server_state(client)
        started = datetime.now(UTC).isoformat(timespec="seconds")
        runner = Runner(config, client)
        await (runner.open_loop() if config.mode == "open" else runner.closed_loop())
        wall_s = runner.now()
        after = await server_state(client)
    return LoadResult(config, started, runner.outcomes, before, after, wall_s)


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def latency_summary(values: list[float]) -> dict[str, float | None]:
    return {f"p{q}": percentile(values, q) for q in (50, 90, 99)} | {"max": max(values) if values else None}


def finished_at(o: Fate) -> float:
    """When the answer existed: for a ticket, when its job finished (not when a poll noticed)."""
    return o.due_at + (o.actual_s if o.actual_s is not None else o.latency_s)


def useful_lane_s_in_window(o: Fate, window_s: float) -> float:
    """Lane-seconds this answer's inference spent inside [0, window]: a batch's time is split among its reviews."""
    if not o.infer_ms:
        return 0.0
    end = finished_at(o)
    start = end - o.infer_ms / 1000
    return max(0.0, min(end, window_s) - max(start, 0.0)) / (o.batch_size or 1)


def offered_vs(config: LoadConfig, outcomes: list[Fate], capacity: float | None) -> float | None:
    """First tries a second over the reviews a second the lane held: the load an open loop really offered."""
    if config.mode != "open" or not capacity:
        return None
    first_tries = sum(1 for o in outcomes if not o.retry)
    return round(first_tries / config.duration_s / capacity, 2)


def summarize(result: LoadResult) -> dict[str, Any]:
    """Counts that add up, latency percentiles, useful throughput against lane capacity, honest hints."""
    config, outcomes = result.config, result.outcomes
    counts = Counter(o.category for o in outcomes)
    ok = [o for o in outcomes if o.category == "ok"]
    rejected = [o for o in outcomes if o.category.startswith("rejected")]
    # Lane-seconds each served review cost: a batch's inference is shared by its reviews.
    costs = [(o.infer_ms or 0.0) / 1000 / (o.batch_size or 1) for o in ok if o.infer_ms]
    capacity = len(costs) / sum(costs) if costs and sum(costs) > 0 else None
    in_window = [o for o in ok if finished_at(o) <= config.duration_s]
    useful = len(in_window) / config.duration_s
    busy = sum(useful_lane_s_in_window(o, config.duration_s) for o in ok)
    batched = config.path == "batched"
    summary: dict[str, Any] = {
        "sent": len(outcomes),
        "counts": dict(sorted(counts.items())),
        "unexplained": len(outcomes) - sum(counts.values()),
        "ok_latency_s": latency_summary([o.latency_s for o in ok]),
        "rejection_latency_s": latency_summary([o.latency_s for o in rejected]),
        "useful_per_s": round(useful, 3),
        "lane_capacity_per_s": None if capacity is None else round(capacity, 3),
        "useful_vs_capacity": None if capacity is None else round(useful / capacity, 3),
        # How many times its capacity the lane was offered: first tries only, against what it held in the run.
        "offered_vs_capacity": offered_vs(config, outcomes, capacity),
        # The same question without edge effects: the share of the window the lane spent on answers delivered.
        "useful_lane_share": round(busy / config.duration_s, 3) if costs else None,
        "mean_batch": round(sum(o.batch_size or 1 for o in ok) / len(ok), 2) if batched and ok else None,
    }
    etas = [(o.eta_s, o.actual_s) for o in ok if o.eta_s is not None and o.actual_s is not None]
    if etas:
        honest = [abs(eta - actual) <= max(1.5, 0.25 * actual) for eta, actual in etas]
        summary["eta"] = {
            "tickets": len(etas),
            "within_target": round(sum(honest) / len(etas), 3),
            "median_error_s": percentile([eta - actual for eta, actual in etas], 50),
        }
    retries = [o for o in outcomes if o.retry]
    if retries:
        seated = [o for o in retries if o.category == "ok"]
        walk_ins = [o for o in outcomes if not o.retry]
        refused = [o for o in walk_ins if o.category.startswith("rejected")]
        summary["comeback"] = {
            "retries": len(retries),
            "got_a_seat": round(len(seated) / len(retries), 3),
            "came_with_a_hold": sum(1 for o in retries if o.hold_result is not None),
            "hold_results": dict(Counter(o.hold_result for o in retries if o.hold_result)),
            # The cost of holding seats: how often a first try (a walk-in) was refused.
            "walk_ins": len(walk_ins),
            "walk_ins_refused": round(len(refused) / len(walk_ins), 3) if walk_ins else None,
            # No policy seats more returners on their first return than the lane served answers: were every
            # answer a returner's, this share of them would be seated. A target above it measures the load.
            "seated_at_most": round(min(1.0, len(ok) / len(walk_ins)), 3) if walk_ins else None,
        }
    stats = result.server_after.get("stats", {})
    if stats:
        summary["server_lane"] = stats.get("lane")
    return summary


def write_result(result: LoadResult, out: Path) -> dict[str, Any]:
    """`out`.json (config, summary, every outcome) and `out`.png (latency and answers over time)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = result.summary()
    payload = {
        "config": asdict(result.config),
        "started": result.started,
        "wall_s": round(result.wall_s, 2),
        "summary": summary,
        "server_before": result.server_before,
        "server_after": result.server_after,
        "outcomes": [asdict(o) for o in result.outcomes],
    }
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    draw_chart(result, out.with_suffix(".png"))
    return summary


COLORS = {"ok": "tab:green", "rejected_429": "tab:orange", "rejected_503": "tab:red"}


def draw_chart(result: LoadResult, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    config = result.config
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True)
    for category in sorted({o.category for o in result.outcomes}):
        chosen = [o for o in result.outcomes if o.category == category]
        color = COLORS.get(category, "tab:gray")
        top.scatter([o.due_at for o in chosen], [o.latency_s for o in chosen], s=6, color=color, label=category)
    top.set_ylabel("latency (s)")
    top.set_yscale("symlog", linthresh=0.1)
    top.legend(loc="upper left", fontsize=8)
    load = f"{config.concurrency} clients closed loop"
    if config.mode == "open" and config.burst:
        load = f"bursts of {config.burst} every {config.every_s:g} s"
    elif config.mode == "open":
        load = f"{config.rate:.2f}/s open loop"
    top.set_title(f"{config.path}: {load}, {config.duration_s:g} s")
    seconds = math.ceil(max([o.due_at + o.latency_s for o in result.outcomes] or [1.0]))
    bins = list(range(seconds + 1))
    stacked = {}
    for category in ("ok", "rejected_429", "rejected_503"):
        stacked[category] = [o.due_at + o.latency_s for o in result.outcomes if o.category == category]
    bottom.hist(
        list(stacked.values()),
        bins=bins,
        stacked=True,
        color=[COLORS[c] for c in stacked],
        label=list(stacked),
    )
    bottom.axvline(config.duration_s, color="black", linewidth=0.8, linestyle="--")
    bottom.set_xlabel("seconds since start (answers counted when they arrive)")
    bottom.set_ylabel("answers per second")
    bottom.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)


def parse_args(argv: list[str] | None = None) -> tuple[LoadConfig, Path]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--path", default="limited", help=f"{'|'.join(ROUTES)}, or a URL path to POST to")
    load = parser.add_mutually_exclusive_group(required=True)
    load.add_argument("--rate", type=float, help="open loop: requests per second")
    load.add_argument("--burst", type=int, help="open loop: this many at once every --every seconds")
    load.add_argument("--concurrency", type=int, help="closed loop: concurrent clients")
    parser.add_argument("--every", type=float, default=10.0, help="seconds between bursts")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of sending")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds to wait for answers afterwards")
    parser.add_argument("--retry-once", action="store_true", help="open loop: retry a 429/503 once after Retry-After")
    parser.add_argument("--text-chars", type=int, default=0, help="pad reviews to this many characters")
    parser.add_argument("--out", type=Path, default=Path("load-result"), help="writes OUT.json and OUT.png")
    args = parser.parse_args(argv)
    config = LoadConfig(
        url=args.url,
        path=args.path,
        mode="closed" if args.concurrency else "open",
        rate=args.rate or 0.0,
        burst=args.burst or 0,
        every_s=args.every,
        concurrency=args.concurrency or 0,
        duration_s=args.duration,
        drain_s=args.drain,
        retry_once=args.retry_once,
        text_chars=args.text_chars,
    )
    return config, args.out


def main(argv: list[str] | None = None) -> None:
    config, out = parse_args(argv)
    result = asyncio.run(run_load(config))
    summary = write_result(result, out)
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.png')}")


if __name__ == "__main__":
    main()
