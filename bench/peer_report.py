"""What `just bench-peer` reports: a row per run, the median of the repeats, and the targets checked on those.

One run of each is not enough on a shared VM: the same review's inference took 1.0-1.2× as
long from one minute to the next with nothing else on the core (docs/batching.md), which is
larger than the 5 % the targets ask about. So every scenario runs several times, the servers
taking turns going first, and the targets are judged on medians, with the spread shown.
"""

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kit.load import LoadResult, percentile
from kit.work import WorkMeter, in_window

LAB, PEER = "lab ③ batched", "LitServe 0.2.19"
LAB_LIMITED, INFINITY = "lab ② limited", "Infinity 0.0.78"
LAB_ADAPTIVE = "lab ⑤ adaptive"  # beyond the handout: refuses at the door by the delay it can promise
ONE_AT_A_TIME = "one at a time"
WINDOW_S = 0.025  # ③'s batching window: one review alone waits it out before its inference


@dataclass
class Row:
    """One server, one scenario, one run."""

    server: str
    scenario: str
    run: int
    sent: int
    served: int
    not_served: int  # timeouts, transport errors, non-2xx: anything but an answer
    not_served_by: dict[str, int]  # the client's category for each of those
    mean_batch: float | None  # per request: the size of the batch each served request rode
    served_per_s: float  # answers per second over the window answers could arrive in (row_of says which)
    p50_s: float | None
    p95_s: float | None
    peak_rss_mb: float
    # Each request's latency in the order it was due (None: not served). Both servers get the
    # same reviews at the same moments, so request i of one run pairs with request i of the other.
    latencies_s: list[float | None]
    # Seconds the server's processes kept using CPU after the last client left (open 2× only).
    busy_after_s: float | None = None
    died: str | None = None  # the server stopped answering while its health check said OK
    # Served work: the served reviews' one-at-a-time cost summed over the same window as served/s (kit/work.py),
    # so a server that answers the short reviews is not read as doing more; None without a measured cost.
    served_work: float | None = None
    offered_mean_chars: float | None = None
    offered_mean_tokens: float | None = None
    served_mean_chars: float | None = None
    served_mean_tokens: float | None = None
    # An open stream's answers delivered within its sending window, counted and weighed the way bench.adaptive
    # counts ②③⑤ (kit/work.py `in_window`): what the page's cost curve draws beside them; None for the rest.
    served_in_window: int | None = None
    served_work_in_window: float | None = None


def answer_window(result: LoadResult) -> float:
    """Seconds from the first request due to the end of the window in which its answers count.

    Without a client timeout: to the last answer (see row_of). With one: to the last request's due
    time plus the timeout, the same for every server on the same schedule. Ending at the last answer
    instead rewarded a server for giving up: on a 2× stream Infinity's last answer in time came at
    52.7 s and nobody after it was served, so its 94 answers read as 1.78/s, as many per second as the
    lab's 160 answers ending at 89 s (2026-12-01 23:40, twin)."""
    ok = [o for o in result.outcomes if o.category == "ok"]
    if result.config.timeout_s > 0 and result.outcomes:
        return max(o.due_at for o in result.outcomes) + result.config.timeout_s
    return max((o.due_at + o.latency_s for o in ok), default=0.0)


def row_of(
    server: str,
    scenario: str,
    run: int,
    result: LoadResult,
    batch_sizes: list[int],
    peak_rss: int,
    busy_after_s: float | None = None,
    died: str | None = None,
    meter: WorkMeter | None = None,
) -> Row:
    """`batch_sizes`: LitServe's own log of its batches; the lab's come from X-Batch-Size. `meter`: each review's
    cost one at a time, to weigh what was served (the texts each Fate carries).

    Without a client timeout, served/s runs to the last answer, for bursts and open loops alike: counting only answers
    inside the sending window moves in steps of one batch (8 answers in 60 s is 0.13/s, 10 %),
    which made a one-batch phase shift look like a 10 % gap.
    """
    ok = [o for o in result.outcomes if o.category == "ok"]
    latencies = [o.latency_s for o in ok]
    if batch_sizes:
        mean_batch: float | None = sum(n * n for n in batch_sizes) / sum(batch_sizes)  # per request (Σn²/Σn)
    else:
        mean_batch = sum(o.batch_size or 1 for o in ok) / len(ok) if ok else None
    span = answer_window(result)
    work: dict[str, float | None] = {}
    window: dict[str, Any] = {}
    if meter is not None:
        offered = [o.text for o in result.outcomes if o.text is not None]
        served = [o.text for o in ok if o.text is not None]
        work = meter.row(offered, served, span)
        if result.config.rate > 0 and result.config.timeout_s > 0:
            within, straddling = in_window(result)
            window["served_in_window"] = len(within)
            window["served_work_in_window"] = meter.row(offered, within, result.config.duration_s, straddling)[
                "served_work"
            ]
    return Row(
        server=server,
        scenario=scenario,
        run=run,
        sent=len(result.outcomes),
        served=len(ok),
        not_served=len(result.outcomes) - len(ok),
        not_served_by=dict(Counter(o.category for o in result.outcomes if o.category != "ok")),
        mean_batch=None if mean_batch is None else round(mean_batch, 2),
        served_per_s=round(len(ok) / span, 3) if span else 0.0,
        p50_s=percentile(latencies, 50),
        p95_s=percentile(latencies, 95),
        peak_rss_mb=round(peak_rss / 2**20, 1),
        latencies_s=[
            round(o.latency_s, 4) if o.category == "ok" else None
            for o in sorted(result.outcomes, key=lambda o: o.due_at)
        ],
        busy_after_s=None if busy_after_s is None else round(busy_after_s, 2),
        died=died,
        served_work=work.get("served_work"),
        offered_mean_chars=work.get("offered_mean_chars"),
        offered_mean_tokens=work.get("offered_mean_tokens"),
        served_mean_chars=work.get("served_mean_chars"),
        served_mean_tokens=work.get("served_mean_tokens"),
        **window,
    )


@dataclass(frozen=True)
class Spread:
    """The median of the runs, and their lowest and highest."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float | None]) -> "Spread | None":
        present = [v for v in values if v is not None]
        if not present:
            return None
        return cls(statistics.median(present), min(present), max(present))

    def text(self, digits: int = 2) -> str:
        if self.low == self.high:
            return f"{self.median:.{digits}f}"
        return f"{self.median:.{digits}f} ({self.low:.{digits}f}–{self.high:.{digits}f})"


@dataclass(frozen=True)
class Summary:
    scenario: str
    server: str
    runs: int
    not_served: int  # over all runs
    mean_batch: Spread | None
    served_per_s: Spread | None
    p50_s: Spread | None
    p95_s: Spread | None
    peak_rss_mb: Spread | None
    busy_after_s: Spread | None = None
    served_work: Spread | None = None
    offered_mean_chars: Spread | None = None
    served_mean_chars: Spread | None = None


def summarize(rows: Sequence[Row]) -> list[Summary]:
    """One summary per (scenario, server), in the order the rows came."""
    keys = list(dict.fromkeys((r.scenario, r.server) for r in rows))
    summaries = []
    for scenario, server in keys:
        runs = [r for r in rows if (r.scenario, r.server) == (scenario, server)]
        summaries.append(
            Summary(
                scenario=scenario,
                server=server,
                runs=len(runs),
                not_served=sum(r.not_served for r in runs),
                mean_batch=Spread.of([r.mean_batch for r in runs]),
                served_per_s=Spread.of([r.served_per_s for r in runs]),
                p50_s=Spread.of([r.p50_s for r in runs]),
                p95_s=Spread.of([r.p95_s for r in runs]),
                peak_rss_mb=Spread.of([r.peak_rss_mb for r in runs]),
                busy_after_s=Spread.of([r.busy_after_s for r in runs]),
                served_work=Spread.of([r.served_work for r in runs]),
                offered_mean_chars=Spread.of([r.offered_mean_chars for r in runs]),
                served_mean_chars=Spread.of([r.served_mean_chars for r in runs]),
            )
        )
    return summaries


@dataclass(frozen=True)
class Paired:
    """The lab's latency against a peer's for the same review due at the same moment, over every run."""

    scenario: str
    pairs: int
    median_s: float
    p25_s: float
    p75_s: float
    lab: str = LAB
    peer: str = PEER
    ratio: float | None = None  # median of lab ÷ peer, request by request
    ratio_less_window: float | None = None  # the same with ③'s 25 ms window taken off the lab's side


def paired(rows: Sequence[Row], lab_name: str = LAB, peer_name: str = PEER) -> list[Paired]:
    """A finer view than the medians of p50s: each request against its twin in the same run.

    In an open loop each request has its own due time, so the pairs are exact. A burst's requests
    are all due at once and recorded as they finish: there the k-th answer pairs with the k-th.
    """
    out = []
    for scenario in dict.fromkeys(r.scenario for r in rows):
        by_run = {(r.server, r.run): r for r in rows if r.scenario == scenario}
        gaps = []
        twins: list[tuple[float, float]] = []
        for (server, run), lab in by_run.items():
            peer = by_run.get((peer_name, run))
            if server != lab_name or peer is None or len(lab.latencies_s) != len(peer.latencies_s):
                continue
            twins += [(a, b) for a, b in zip(lab.latencies_s, peer.latencies_s, strict=True) if a and b]
        if twins:
            gaps = [a - b for a, b in twins]
            q = statistics.quantiles(gaps, n=4) if len(gaps) > 1 else [gaps[0]] * 3
            ratio = statistics.median(a / b for a, b in twins)
            less = statistics.median((a - WINDOW_S) / b for a, b in twins)
            out.append(
                Paired(scenario, len(gaps), statistics.median(gaps), q[0], q[2], lab_name, peer_name, ratio, less)
            )
    return out


def all_pairs(rows: Sequence[Row]) -> list[Paired]:
    """③ against each peer, and ② against Infinity one review at a time."""
    servers = {r.server for r in rows}
    out = [p for peer in (PEER, INFINITY) if peer in servers for p in paired(rows, LAB, peer)]
    if LAB_LIMITED in servers and INFINITY in servers:
        out += paired(rows, LAB_LIMITED, INFINITY)
    return out


@dataclass(frozen=True)
class Check:
    target: str
    lab: str
    peer: str
    met: bool | None  # None: the scenario was not run
    by: str  # how far from the target, in words


def _pair(
    summaries: Sequence[Summary], scenario_prefix: str, lab: str = LAB, peer: str = PEER
) -> tuple[Summary, Summary] | None:
    found = {s.server: s for s in summaries if s.scenario.startswith(scenario_prefix)}
    return (found[lab], found[peer]) if lab in found and peer in found else None


def _median(spread: Spread | None) -> float:
    return float("nan") if spread is None else spread.median


def check_targets(summaries: Sequence[Summary], twins: Sequence[Paired] = ()) -> list[Check]:
    """The targets, judged on the medians of the runs: against LitServe and against Infinity."""
    checks: list[Check] = []
    servers = {s.server for s in summaries}
    if INFINITY in servers:
        checks += infinity_targets(summaries, twins)
    if PEER not in servers:
        return checks

    def check(target: str, prefix: str, judge: Callable[[Summary, Summary], tuple[str, str, bool, str]]) -> None:
        pair = _pair(summaries, prefix)
        if pair is None:
            checks.append(Check(target, "–", "–", None, "not run"))
            return
        checks.append(Check(target, *judge(*pair)))

    def batch_ratio(lab: Summary, peer: Summary) -> tuple[str, str, bool, str]:
        ratio = _median(lab.mean_batch) / _median(peer.mean_batch)
        return f"{_median(lab.mean_batch):.2f}", f"{_median(peer.mean_batch):.2f}", ratio >= 0.9, f"{ratio:.2f}×"

    def served(lab: Summary, peer: Summary) -> tuple[str, str, bool, str]:
        lab_rate, peer_rate = _median(lab.served_per_s), _median(peer.served_per_s)
        change = lab_rate / peer_rate - 1
        return f"{lab_rate:.3f}/s", f"{peer_rate:.3f}/s", change >= -0.05, f"{change:+.1%}"

    def p50(lab: Summary, peer: Summary) -> tuple[str, str, bool, str]:
        gap = _median(lab.p50_s) - _median(peer.p50_s)
        return f"{_median(lab.p50_s):.2f} s", f"{_median(peer.p50_s):.2f} s", gap <= 0.030, f"{gap * 1000:+.0f} ms"

    def burst(lab: Summary, peer: Summary) -> tuple[str, str, bool, str]:
        rate = _median(lab.served_per_s) / _median(peer.served_per_s) - 1
        tail = _median(lab.p95_s) / _median(peer.p95_s) - 1
        lab_text = f"{_median(lab.served_per_s):.3f}/s, {_median(lab.p95_s):.2f} s"
        peer_text = f"{_median(peer.served_per_s):.3f}/s, {_median(peer.p95_s):.2f} s"
        return lab_text, peer_text, rate >= -0.05 and tail <= 0.05, f"served/s {rate:+.1%}, p95 {tail:+.1%}"

    check("2×: mean batch ≥ 0.9 × LitServe's", "open 2×", batch_ratio)
    check("2×: served/s ≥ LitServe's − 5 %", "open 2×", served)
    check("0.8×: p50 ≤ LitServe's + 30 ms", "open 0.8×", p50)
    for n in (12, 50):
        check(f"burst {n}: served/s and p95 within 5 % or better", f"burst {n}", burst)
    pairs = [p for s in dict.fromkeys(x.scenario for x in summaries) if (p := _pair(summaries, s))]
    if pairs:
        lab_peak = max(_median(lab.peak_rss_mb) for lab, _ in pairs)
        peer_low = min(_median(peer.peak_rss_mb) for _, peer in pairs)
        lower = all(_median(lab.peak_rss_mb) < _median(peer.peak_rss_mb) for lab, peer in pairs)
        lab_text, peer_text = f"≤ {lab_peak:.0f} MB", f"≥ {peer_low:.0f} MB"
        checks.append(Check("peak memory lower, every scenario", lab_text, peer_text, lower, ""))
    return checks


def infinity_targets(summaries: Sequence[Summary], pairs: Sequence[Paired]) -> list[Check]:
    """Against Infinity: one review at a time paired per text, served/s under 2× and in bursts, memory, stopping."""
    checks: list[Check] = []
    by = {(p.lab, p.peer, p.scenario.split(" (")[0]): p for p in pairs}
    for lab, less_window in ((LAB_LIMITED, False), (LAB, True)):
        found = by.get((lab, INFINITY, ONE_AT_A_TIME))
        target = f"one at a time: {lab} ÷ Infinity ≤ 1.00 paired per text" + (
            " (less its 25 ms window)" if less_window else ""
        )
        if found is None or found.ratio is None or found.ratio_less_window is None:
            checks.append(Check(target, "–", "–", None, "not run"))
            continue
        ratio = found.ratio_less_window if less_window else found.ratio
        lab_text = f"{ratio:.3f}" + (f" ({found.ratio:.3f} with it)" if less_window else "")
        checks.append(Check(target, lab_text, "1", ratio <= 1.0, f"{found.pairs} pairs"))

    def verdict(target: str, prefix: str, judge: Callable[[Summary, Summary], tuple[str, str, bool, str]]) -> None:
        pair = _pair(summaries, prefix, LAB, INFINITY)
        checks.append(Check(target, "–", "–", None, "not run") if pair is None else Check(target, *judge(*pair)))

    def served(lab: Summary, peer: Summary) -> tuple[str, str, bool, str]:
        lab_rate, peer_rate = _median(lab.served_per_s), _median(peer.served_per_s)
        return f"{lab_rate:.3f}/s", f"{peer_rate:.3f}/s", lab_rate >= peer_rate, f"{lab_rate / peer_rate - 1:+.1%}"

    def burst(lab: Summary, peer: Summary) -> tuple[str, str, bool, str]:
        rate = _median(lab.served_per_s) / _median(peer.served_per_s) - 1
        tail = _median(lab.p95_s) / _median(peer.p95_s) - 1
        lab_text = f"{_median(lab.served_per_s):.3f}/s, {_median(lab.p95_s):.2f} s"
        peer_text = f"{_median(peer.served_per_s):.3f}/s, {_median(peer.p95_s):.2f} s"
        return lab_text, peer_text, rate >= 0 and tail <= 0.05, f"served/s {rate:+.1%}, p95 {tail:+.1%}"

    def stops(lab: Summary, peer: Summary) -> tuple[str, str, bool, str]:
        lab_s, peer_s = _median(lab.busy_after_s), _median(peer.busy_after_s)
        return f"{lab_s:.1f} s", f"{peer_s:.1f} s", lab_s <= 2.0, "CPU busy after the last client left"

    verdict("2× Poisson, 30 s timeout: served/s ≥ Infinity's", "open 2×", served)
    for n in (12, 50):
        verdict(f"burst {n}: served/s ≥ Infinity's, p95 ≤ Infinity's + 5 %", f"burst {n}", burst)
    verdict("stops working ≤ 2 s after the last client leaves", "open 2×", stops)
    both = [p for s in dict.fromkeys(x.scenario for x in summaries) if (p := _pair(summaries, s, LAB, INFINITY))]
    both = [(lab, peer) for lab, peer in both if _median(peer.peak_rss_mb) > 0]  # 0: not sampled
    if both:
        worst = max(_median(lab.peak_rss_mb) / _median(peer.peak_rss_mb) for lab, peer in both)
        lab_peak = max(_median(lab.peak_rss_mb) for lab, _ in both)
        peer_low = min(_median(peer.peak_rss_mb) for _, peer in both)
        text = f"worst scenario {worst:.2f}×"
        checks.append(
            Check("peak memory ≤ 0.8× Infinity's", f"≤ {lab_peak:.0f} MB", f"≥ {peer_low:.0f} MB", worst <= 0.8, text)
        )
    return checks


def _text(spread: Spread | None, digits: int = 2) -> str:
    return "–" if spread is None else spread.text(digits)


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(
    rows: Sequence[Row], summaries: Sequence[Summary], checks: Sequence[Check], pairs: Sequence[Paired]
) -> str:
    runs = max((s.runs for s in summaries), default=0)
    lines = [
        f"Medians of {runs} runs each (lowest–highest in brackets):",
        "",
        "| scenario | server | not served | mean batch | served/s | served work | served chars (offered) "
        "| p50 s | p95 s | peak RSS MB | busy after s |",
        "|---|---|---:|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        chars = (
            "–"
            if s.served_mean_chars is None
            else f"{_text(s.served_mean_chars, 1)} ({_text(s.offered_mean_chars, 1)})"
        )
        lines.append(
            f"| {s.scenario} | {s.server} | {s.not_served} | {_text(s.mean_batch)} | {_text(s.served_per_s, 3)} "
            f"| {_text(s.served_work)} | {chars} "
            f"| {_text(s.p50_s)} | {_text(s.p95_s)} | {_text(s.peak_rss_mb, 0)} | {_text(s.busy_after_s, 1)} |"
        )
    if any(s.served_work is not None for s in summaries):
        lines += [
            "",
            "Served work: the served reviews' one-at-a-time costs (fitted on tokens, measured through ② one at a time) "
            "summed over the same window as served/s; 1.00 is the lane's whole time on answers, whatever their length.",
        ]
    lines += ["", "The issues' targets, on those medians:", "", "| target | lab | peer | met? |", "|---|---|---|---|"]
    for c in checks:
        verdict = "not run" if c.met is None else ("yes" if c.met else "**no**")
        if c.by and c.met is not None:
            verdict += f" ({c.by})"
        lines.append(f"| {c.target} | {c.lab} | {c.peer} | {verdict} |")
    lines += [
        "",
        "Request by request: the lab's latency against the peer's, same review due at the same moment, all runs:",
        "",
        "| scenario | lab | peer | pairs | median gap | middle half | median ratio | ratio less 25 ms |",
        "|---|---|---|---:|---:|---|---:|---:|",
    ]
    for p in pairs:
        middle = f"{p.p25_s * 1000:+.0f} to {p.p75_s * 1000:+.0f} ms"
        lines.append(
            f"| {p.scenario} | {p.lab} | {p.peer} | {p.pairs} | {p.median_s * 1000:+.0f} ms | {middle} "
            f"| {_num(p.ratio, 3)} | {_num(p.ratio_less_window, 3)} |"
        )
    died = [r for r in rows if r.died]
    if died:
        lines += ["", "Servers that stopped answering while their health check said OK:", ""]
        lines += [f"- {r.scenario}, run {r.run}, {r.server}: {r.died}" for r in died]
    lines += [
        "",
        "Every run (the servers take turns going first):",
        "",
        "| scenario | run | server | sent | served | mean batch | served/s | served work | served chars "
        "| p50 s | p95 s | peak RSS MB |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r.scenario} | {r.run} | {r.server} | {r.sent} | {r.served} | {_num(r.mean_batch)} "
            f"| {r.served_per_s:.3f} | {_num(r.served_work)} | {_num(r.served_mean_chars, 1)} "
            f"| {_num(r.p50_s)} | {_num(r.p95_s)} | {r.peak_rss_mb:.0f} |"
        )
    return "\n".join(lines)
