#!/usr/bin/env python3
"""Fire N reviews at the review lab at the same instant and print what each one got.

Standard library only (Python 3.9+), so it runs on any student laptop:

    curl -O http://BOX:8000/static/burst.py
    python3 burst.py http://BOX:8000 12            # each of the four paths in turn
    python3 burst.py http://BOX:8000/api 50 limited    # the API base works too; naive | batched | tickets | 1-4
    python3 burst.py http://BOX:8000 12 adaptive       # ⑤, beyond the handout (or 5): any path the box serves
    python3 burst.py http://BOX:8000 12 --json rows.json
    python3 burst.py http://BOX:8000 12 limited --retry   # the refused come back after Retry-After (3 times at most)
    python3 burst.py https://BOX:8443 12 -k            # the classroom front, whose certificate is its own CA's

The address may be the box's root or its API base (`$B` in the handout), with or without a
trailing slash. Before firing, one GET of the box's sample reviews checks that the address is
a review lab: if nothing answers or it answers 404, burst.py says which URL it tried and what
to pass instead, and fires nothing. Then it asks the box which paths it serves (GET /api/paths):
the handout's four are built in, a path beyond the handout is learned from the box.

Unlike a browser (at most six connections per server), every request here gets its own
thread and its own connection, released together by a barrier: a truly simultaneous burst.

With --retry, a refused client (429/503 with Retry-After) comes back as a well-behaved client
would: after its Retry-After plus a little jitter, a bounded number of times, presenting the
Seat-Hold token path ② gave it (its seat is held until a few seconds after the Retry-After).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import random
import ssl
import string
import sys
import threading
import time
import unicodedata
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from email.message import Message
from typing import Any


@dataclass(frozen=True)
class BoxPath:
    """One path a box serves: its place (① = 1), its label, where a review is POSTed, whether the answer is a
    ticket to follow (202) rather than the result, and whether it is one of the printed handout's four."""

    number: int
    label: str
    route: str
    ticket: bool = False
    handout: bool = True


# The printed handout's four, which every lab box serves. A path beyond the handout is learned from the box
# (`learn_paths`) before a burst, so a new path on the box needs no new burst.py; `all` fires the handout's.
PATHS: dict[str, BoxPath] = {
    "naive": BoxPath(1, "① naive", "/api/naive/predict"),
    "limited": BoxPath(2, "② limited", "/api/limited/predict"),
    "batched": BoxPath(3, "③ batched", "/api/batched/predict"),
    "tickets": BoxPath(4, "④ tickets", "/api/queue/jobs", ticket=True),
}

# Used only when the box's own samples (GET /api/samples) cannot be read.
FALLBACK_REVIEWS = [
    "빵이 맛있어요!",
    "커피가 너무 써요..",
    "사장님 친절하세요",
    "주차가 불편해요ㅠ",
    "가격이 좀 비싸요",
    "매장 깨끗하고 좋아요",
    "줄이 너무 길어요",
    "포장이 꼼꼼해요",
    "크루아상 겉바속촉 인정합니다",
    "배달이 늦었어요",
    "직원분이 주문을 잘못 받으셨어요",
    "또 올게요~~",
]


RETRY_JITTER_S = 0.5  # a returner comes back up to this much after its Retry-After, so returns spread out


@dataclass
class Attempt:
    """One try of a row's request; with --retry a refused client tries again (times in ms from its first send)."""

    at_ms: float
    status: int | None
    error: str | None
    retry_after_s: int | None
    round_trip_ms: float | None
    wait_ms: float | None
    infer_ms: float | None
    hold: str | None  # Seat-Hold-Result of this try (seated, expired, ...), or "held" when it was given a seat hold


@dataclass
class Row:
    """One request of a burst, as this client saw it (times in milliseconds unless `_s`)."""

    index: int
    path: str
    text: str
    status: int | None = None  # None: no HTTP answer at all (see `error`)
    error: str | None = None  # connection error, or the body's "error" code
    wait_ms: float | None = None  # Server-Timing wait
    infer_ms: float | None = None  # Server-Timing infer
    round_trip_ms: float | None = None  # until the answer was in hand (tickets: until done)
    batch_size: int | None = None  # X-Batch-Size
    top_topic: str | None = None
    cache: str | None = None  # X-Cache
    retry_after_s: int | None = None  # Retry-After on 429/503
    ticket_ms: float | None = None  # tickets: the 202 turnaround
    eta_s: float | None = None  # tickets: ETA promised with the 202
    actual_s: float | None = None  # tickets: the server's enqueue-to-done time
    job_status: str | None = None  # tickets: done | failed
    started_at: float = 0.0  # perf_counter() when this request was (first) sent
    hold_token: str | None = None  # ②: the Seat-Hold a 429 gave, sent back on the next try
    hold_result: str | None = None  # ②: what the token sent got (Seat-Hold-Result: seated, expired, ...)
    attempts: list[Attempt] = field(default_factory=list)  # every try, the last one included

    @property
    def served(self) -> bool:
        return self.job_status == "done" if PATHS[self.path].ticket else self.status == 200


@dataclass
class Summary:
    path: str
    counts: dict[str, int]
    served: int
    size: int
    p50_ms: float | None
    p95_ms: float | None
    duration_s: float
    throughput: float | None  # served requests per second of the burst
    mean_batch: float | None
    eta_late_s: float | None  # tickets: mean of actual minus promised
    last_served_s: float | None = None  # --retry: from the first send until the last student was served
    attempts_mean: float | None = None  # --retry: tries per student
    attempts_max: int | None = None
    returners: int = 0  # --retry: students who came back at least once
    seated_first_return: int = 0  # ... and were served on their first return


# ------------------------------------------------------------------------- HTTP

# `-k`: the classroom front's certificate comes from its own local CA, which a laptop does not trust.
TLS_CONTEXT: ssl.SSLContext | None = None


def trust_any_certificate() -> None:
    global TLS_CONTEXT
    TLS_CONTEXT = ssl.create_default_context()
    TLS_CONTEXT.check_hostname = False
    TLS_CONTEXT.verify_mode = ssl.CERT_NONE


@dataclass
class Answer:
    status: int
    headers: Message
    body: Any


def request_json(
    method: str,
    url: str,
    payload: dict[str, Any] | None = None,
    timeout_s: float = 120.0,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request on its own connection; HTTP errors (429, 503, …) are answers, not exceptions."""
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    sent = {"Content-Type": "application/json", **(headers or {})}
    request = urllib.request.Request(url, data=data, method=method, headers=sent)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s, context=TLS_CONTEXT) as response:
            return Answer(response.status, response.headers, _json(response.read()))
    except urllib.error.HTTPError as exc:
        try:
            raw = exc.read()
        except OSError:
            raw = b""
        finally:
            exc.close()
        return Answer(exc.code, exc.headers, _json(raw))


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw.decode("utf-8"))
    except ValueError:
        return None


def parse_server_timing(header: str | None) -> dict[str, float]:
    """`wait;dur=12.5, infer;dur=980.1` -> {"wait": 12.5, "infer": 980.1} (milliseconds)."""
    timing: dict[str, float] = {}
    for metric in (header or "").split(","):
        name, _, params = metric.strip().partition(";")
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "dur" and name:
                with contextlib.suppress(ValueError):
                    timing[name.strip()] = float(value)
    return timing


def box_root(url: str) -> str:
    """The box's root from what a student typed: `http://BOX:8000`, `…/`, `…/api` and `…/api/` are all one box.

    The handout's `$B` is the API base (it ends in /api) and the paths here start with /api, so a
    base taken as typed would ask for /api/api/… and get 404 on every request.
    """
    root = url.strip().rstrip("/")
    if root.endswith("/api"):
        root = root[: -len("/api")].rstrip("/")
    return root


class NotALab(Exception):
    """The address does not lead to a review lab; the message says what was tried and what to pass."""


def _instead(root: str) -> str:
    """What to pass instead, in the student's terms: the host's root and its API base."""
    parts = urllib.parse.urlsplit(root)
    host = f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else "http://BOX:8000"
    return f"상자 주소({host}) 또는 API 주소({host}/api)를 주세요. 예: python3 burst.py {host}/api 12"


def check_box(root: str, timeout_s: float = 10.0) -> list[str]:
    """Ask the box for its sample reviews: proof that `root` is a lab, and the reviews to fire.

    Raises NotALab when nothing answers or the answer is 404 (a wrong path: every burst request
    would be a 404 too). Any other answer counts as a lab; unreadable samples fall back to the
    built-in list.
    """
    url = root + "/api/samples"
    try:
        answer = request_json("GET", url, timeout_s=timeout_s)
    except (OSError, ValueError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, ssl.SSLCertVerificationError):
            raise NotALab(
                f"{url} 의 인증서를 믿을 수 없습니다 ({reason.verify_message}).\n"
                "수업용 주소(상자 자체 인증서)라면 -k 를 붙여 다시 실행하세요: python3 burst.py URL N -k"
            ) from exc
        raise NotALab(
            f"{url} 에 연결하지 못했습니다 ({type(exc).__name__}: {reason}).\n"
            f"상자가 켜져 있는지, 주소와 포트가 맞는지 확인하세요. {_instead(root)}"
        ) from exc
    if answer.status == 404:
        raise NotALab(
            f"{url} 가 404(없는 주소)를 돌려줬습니다: 이 주소에는 리뷰 실습 상자의 API가 없습니다.\n{_instead(root)}"
        )
    try:
        texts = [str(item["text"]) for item in answer.body]
    except (TypeError, KeyError):
        texts = []
    return texts or FALLBACK_REVIEWS


def paths_from(listed: Any) -> dict[str, BoxPath]:
    """The box's GET /api/paths answer as burst.py's table; entries it cannot read are left out."""
    found: dict[str, BoxPath] = {}
    for item in listed if isinstance(listed, list) else []:
        try:
            found[str(item["name"])] = BoxPath(
                number=int(unicodedata.numeric(str(item["number"]))),
                label=str(item["label"]),
                route=str(item["route"]),
                ticket=item["answer"] == "ticket",
                handout=bool(item["handout"]),
            )
        except (TypeError, KeyError, ValueError):
            continue
    return found


def learn_paths(root: str, timeout_s: float = 10.0) -> None:
    """Add the paths this box serves beyond the handout to `PATHS`; a box that cannot say keeps the four."""
    try:
        answer = request_json("GET", root + "/api/paths", timeout_s=timeout_s)
    except (OSError, ValueError, http.client.HTTPException):
        return
    if answer.status == 200:
        PATHS.update(paths_from(answer.body))


def path_named(name: str) -> str | None:
    """`limited`, `2` or `②` → "limited"; None when this box serves no such path."""
    by_number = {str(p.number): key for key, p in PATHS.items()}
    by_number.update({chr(0x2460 + p.number - 1): key for key, p in PATHS.items() if 1 <= p.number <= 20})
    name = name.strip().lower()
    return name if name in PATHS else by_number.get(name)


def path_choices() -> str:
    """How the refusal of an unknown path lists this box's: "naive, limited, …, adaptive, 1-5 or all"."""
    numbers = sorted(p.number for p in PATHS.values())
    return f"{', '.join(PATHS)}, {numbers[0]}-{numbers[-1]} or all"


def distinct_texts(reviews: list[str], n: int, tag: str) -> list[str]:
    """N different texts; the tag keeps them out of the result cache so every one is inferred."""
    return [f"{reviews[i % len(reviews)]} #{tag}-{i + 1}" for i in range(n)]


# ------------------------------------------------------------------------- firing


def follow_ticket(base_url: str, row: Row, job: dict[str, Any], timeout_s: float) -> None:
    """Poll the ticket until done or failed (often when its ETA is near, seldom when far)."""
    deadline = time.monotonic() + timeout_s
    answer_headers: Message | None = None
    while job.get("status") not in ("done", "failed"):
        if time.monotonic() > deadline:
            row.job_status, row.error = "failed", "client gave up following the ticket"
            return
        eta = job.get("eta_seconds")
        time.sleep(min(1.0, max(0.25, (eta if eta is not None else 0.5) / 2)))
        try:
            answer = request_json("GET", f"{base_url}/api/queue/jobs/{job['job_id']}", timeout_s=30)
        except (OSError, http.client.HTTPException):
            continue  # a lost poll is retried; the job itself is safe on the box
        if answer.status != 200 or not isinstance(answer.body, dict):
            row.job_status, row.error = "failed", f"poll answered {answer.status}"
            return
        job, answer_headers = answer.body, answer.headers
    _finish_ticket(row, job, answer_headers)


def _finish_ticket(row: Row, job: dict[str, Any], headers: Message | None) -> None:
    row.job_status = str(job.get("status"))
    row.error = job.get("error") or row.error
    timing = parse_server_timing(headers.get("Server-Timing") if headers is not None else None)
    row.wait_ms = timing.get("wait", job.get("waited_ms"))
    row.infer_ms = timing.get("infer", job.get("inference_ms"))
    if job.get("waited_ms") is not None:
        row.actual_s = (job["waited_ms"] + (job.get("inference_ms") or 0.0)) / 1000
    result = job.get("result")
    # The handout's shape is {"topics": [...]}; older boxes answered the bare list.
    topics = result.get("topics") if isinstance(result, dict) else result
    if isinstance(topics, list) and topics and isinstance(topics[0], dict):
        row.top_topic = topics[0].get("label")


def fire_one(base_url: str, path: str, row: Row, timeout_s: float) -> None:
    """Send one review and fill `row`; a connection error is recorded on the row, never raised."""
    url = base_url + PATHS[path].route
    row.started_at = time.perf_counter()
    hold = {"Seat-Hold": row.hold_token} if row.hold_token else None
    row.hold_token = None
    try:
        answer = request_json("POST", url, {"text": row.text}, timeout_s=timeout_s, headers=hold)
    except (OSError, ValueError, http.client.HTTPException) as exc:  # refused, reset, timeout, cut-off answer
        row.error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        row.round_trip_ms = (time.perf_counter() - row.started_at) * 1000
        return
    turnaround_ms = (time.perf_counter() - row.started_at) * 1000
    body = answer.body if isinstance(answer.body, dict) else {}
    row.status = answer.status
    timing = parse_server_timing(answer.headers.get("Server-Timing"))
    row.wait_ms, row.infer_ms = timing.get("wait"), timing.get("infer")
    row.cache = answer.headers.get("X-Cache")
    batch = answer.headers.get("X-Batch-Size")
    row.batch_size = int(batch) if batch and batch.isdigit() else None
    retry = answer.headers.get("Retry-After")
    row.retry_after_s = int(retry) if retry and retry.isdigit() else None
    row.hold_token = answer.headers.get("Seat-Hold")
    row.hold_result = answer.headers.get("Seat-Hold-Result")
    row.error = body.get("error")
    if isinstance(body.get("top"), dict):
        row.top_topic = body["top"].get("label")
    if PATHS[path].ticket and answer.status == 202:
        row.ticket_ms, row.eta_s = turnaround_ms, body.get("eta_seconds")
        if body.get("status") in ("done", "failed"):  # answered from the cache at once
            _finish_ticket(row, body, answer.headers)
        else:
            follow_ticket(base_url, row, body, timeout_s)
    row.round_trip_ms = (time.perf_counter() - row.started_at) * 1000


def refused_with_hint(row: Row) -> bool:
    return row.status in (429, 503) and row.retry_after_s is not None


def record_attempt(row: Row, first_sent: float) -> None:
    hold = "held" if row.hold_token else row.hold_result
    row.attempts.append(
        Attempt(
            at_ms=(row.started_at - first_sent) * 1000,
            status=row.status,
            error=row.error,
            retry_after_s=row.retry_after_s,
            round_trip_ms=row.round_trip_ms,
            wait_ms=row.wait_ms,
            infer_ms=row.infer_ms,
            hold=hold,
        )
    )


def fire_until_served(
    base_url: str, path: str, row: Row, timeout_s: float, retries: int, jitter: Callable[[], float]
) -> None:
    """`fire_one`, then while refused with a Retry-After and tries are left: wait it out (plus jitter), try again.

    The row ends as its last try; `started_at` and `round_trip_ms` span all of them (the student's view).
    """
    first_sent = 0.0
    for attempt in range(retries + 1):
        for name in ("status", "error", "wait_ms", "infer_ms", "batch_size", "top_topic", "cache", "retry_after_s"):
            setattr(row, name, None)
        row.hold_result = None
        fire_one(base_url, path, row, timeout_s)
        first_sent = first_sent or row.started_at
        record_attempt(row, first_sent)
        if attempt == retries or not refused_with_hint(row):
            break
        time.sleep((row.retry_after_s or 0) + jitter())
    end = row.started_at + (row.round_trip_ms or 0.0) / 1000
    row.started_at, row.round_trip_ms = first_sent, (end - first_sent) * 1000


def fire_burst(
    base_url: str,
    path: str,
    texts: list[str],
    *,
    timeout_s: float = 120.0,
    retries: int = 0,
    jitter: Callable[[], float] | None = None,
) -> list[Row]:
    """Send every text at once (one thread and one connection each) and wait for every answer;
    with `retries`, a refused one comes back after its Retry-After, up to that many times."""
    base_url = box_root(base_url)
    rows = [Row(index=i + 1, path=path, text=text) for i, text in enumerate(texts)]
    barrier = threading.Barrier(len(rows))

    def worker(row: Row) -> None:
        # If a thread fails to start in time the barrier breaks: fire anyway rather than hang.
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=30)
        fire_until_served(
            base_url, path, row, timeout_s, retries, jitter or (lambda: random.uniform(0, RETRY_JITTER_S))
        )

    threads = [threading.Thread(target=worker, args=(row,), name=f"burst-{row.index}") for row in rows]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return rows


# ------------------------------------------------------------------------- summarising


def quantile(values: list[float], q: float) -> float | None:
    """Nearest-rank quantile (the page uses the same rule)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def status_key(row: Row) -> str:
    return "error" if row.status is None else str(row.status)


def summarize(path: str, rows: list[Row], retry: bool = False) -> Summary:
    """Counts, round trips, throughput; with `retry`, also how long the whole crowd took and the tries it cost."""
    counts: dict[str, int] = {}
    for row in rows:
        counts[status_key(row)] = counts.get(status_key(row), 0) + 1
    served = [r for r in rows if r.served]
    totals = [r.round_trip_ms for r in served if r.round_trip_ms is not None]
    start = min((r.started_at for r in rows), default=0.0)
    end = max((r.started_at + (r.round_trip_ms or 0) / 1000 for r in rows), default=start)
    duration_s = end - start
    batches = [r.batch_size for r in rows if r.batch_size]
    inferred = [r for r in served if r.cache != "hit"]
    mean_batch = sum(batches) / len(batches) if batches else (1.0 if inferred else None)
    eta_rows = [r for r in rows if r.actual_s is not None and r.eta_s is not None]
    summary = Summary(
        path=path,
        counts=counts,
        served=len(served),
        size=len(rows),
        p50_ms=quantile(totals, 0.5),
        p95_ms=quantile(totals, 0.95),
        duration_s=duration_s,
        throughput=len(served) / duration_s if duration_s > 0 else None,
        mean_batch=mean_batch,
        eta_late_s=sum((r.actual_s or 0.0) - (r.eta_s or 0.0) for r in eta_rows) / len(eta_rows) if eta_rows else None,
    )
    if retry and rows:
        tries = [max(1, len(r.attempts)) for r in rows]
        ends = [r.started_at + (r.round_trip_ms or 0) / 1000 for r in served]
        summary.last_served_s = max(ends) - start if ends else None
        summary.attempts_mean, summary.attempts_max = sum(tries) / len(tries), max(tries)
        came_back = [r for r in rows if len(r.attempts) >= 2]
        summary.returners = len(came_back)
        summary.seated_first_return = sum(1 for r in came_back if r.attempts[1].status in (200, 202))
    return summary


# ------------------------------------------------------------------------- printing


def width(text: str) -> int:
    """Columns a terminal gives `text`: Hangul and other wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def fit(text: str, columns: int, right: bool = False) -> str:
    """Cut to `columns` terminal columns, then pad, so Korean text keeps the table aligned."""
    out, used = "", 0
    for ch in text:
        w = width(ch)
        if used + w > columns:
            break
        out, used = out + ch, used + w
    pad = " " * (columns - used)
    return pad + out if right else out + pad


def ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}ms" if value < 1000 else f"{value / 1000:.2f}s"


def status_text(row: Row) -> str:
    if row.status is None:
        return "연결오류"
    text = str(row.status)
    if row.retry_after_s is not None:
        text += f" ↻{row.retry_after_s}s"
    if PATHS[row.path].ticket and row.status == 202:
        text += f"→{row.job_status or '?'}"
    if row.cache == "hit":
        text += " 캐시"
    return text


COLUMNS: list[tuple[str, int, bool, Callable[[Row], str]]] = [
    ("#", 3, True, lambda r: str(r.index)),
    ("상태", 14, False, status_text),
    ("대기", 8, True, lambda r: ms(r.wait_ms)),
    ("추론", 8, True, lambda r: ms(r.infer_ms)),
    ("왕복", 8, True, lambda r: ms(r.round_trip_ms)),
    ("묶음", 4, True, lambda r: "-" if r.batch_size is None else str(r.batch_size)),
    ("1위 주제", 18, False, lambda r: r.top_topic or (r.error or "")),
]
TICKET_COLUMNS: list[tuple[str, int, bool, Callable[[Row], str]]] = [
    ("202까지", 8, True, lambda r: ms(r.ticket_ms)),
    ("약속ETA", 8, True, lambda r: "-" if r.eta_s is None else f"{r.eta_s:.1f}s"),
    ("실제", 7, True, lambda r: "-" if r.actual_s is None else f"{r.actual_s:.1f}s"),
]


def table(path: str, rows: list[Row], retry: bool = False) -> str:
    """One line per request; with `retry`, every try of a row that came back on the line under it."""
    columns = COLUMNS[:-1] + (TICKET_COLUMNS if PATHS[path].ticket else []) + COLUMNS[-1:]
    lines = ["  ".join(fit(title, w, right) for title, w, right, _ in columns).rstrip()]
    for row in rows:
        lines.append("  ".join(fit(cell(row), w, right) for _, w, right, cell in columns).rstrip())
        if retry and len(row.attempts) > 1:
            lines.append(attempts_line(row))
    return "\n".join(lines)


def summary_line(s: Summary) -> str:
    counts = " ".join(f"{status}×{n}" for status, n in sorted(s.counts.items()))
    parts = [
        f"{PATHS[s.path].label}: {counts}",
        f"처리 {s.served}/{s.size}",
        f"왕복 p50 {ms(s.p50_ms)} p95 {ms(s.p95_ms)}",
        f"처리량 {s.throughput:.2f}건/s" if s.throughput is not None else "처리량 -",
        f"평균 묶음 {s.mean_batch:.1f}" if s.mean_batch is not None else "평균 묶음 -",
        f"전체 {s.duration_s:.2f}s",
    ]
    if s.eta_late_s is not None:
        parts.append(f"ETA 대비 {s.eta_late_s:+.2f}s")
    if s.attempts_mean is not None:
        last = "-" if s.last_served_s is None else f"{s.last_served_s:.2f}s"
        parts.append(f"마지막 학생 처리까지 {last}")
        parts.append(f"학생당 시도 평균 {s.attempts_mean:.1f} (최대 {s.attempts_max})")
        parts.append(f"첫 재방문에 자리 {s.seated_first_return}/{s.returners}")
    return " | ".join(parts)


HOLD_WORDS = {
    "held": "자리 보관",
    "seated": "보관석 착석",
    "expired": "보관 만료",
    "used": "이미 쓴 표",
    "forged": "위조 표",
}


def attempt_text(a: Attempt) -> str:
    """`2.31s 429 ↻2s 자리 보관`: when the try was sent (from the row's first), what it got."""
    status = "연결오류" if a.status is None else str(a.status)
    if a.retry_after_s is not None:
        status += f" ↻{a.retry_after_s}s"
    if a.hold in HOLD_WORDS:
        status += f" {HOLD_WORDS[a.hold]}"
    if a.status == 200:
        status += f" (대기 {ms(a.wait_ms)}, 추론 {ms(a.infer_ms)})"
    return f"{a.at_ms / 1000:.2f}s {status}"


def attempts_line(row: Row) -> str:
    return "    ↳ " + " → ".join(attempt_text(a) for a in row.attempts)


# ------------------------------------------------------------------------- the command


def wait_until_idle(base_url: str, limit_s: float = 120.0) -> None:
    """Let the previous path's work drain, so one path's burst does not pay for another's."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            stats = request_json("GET", base_url + "/api/stats", timeout_s=5).body
            lane, jobs = stats["lane"], stats["jobs"]
            busy = sum(p.get("in_flight", 0) + p.get("waiting", 0) for p in stats["paths"].values())
            if not lane["busy"] and lane["pending_reviews"] == 0 and busy == 0 and not jobs.get("queued"):
                return
        except (OSError, ValueError, TypeError, KeyError, http.client.HTTPException):
            return  # no stats to read: do not block the student on them
        time.sleep(0.5)


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="burst.py", description="리뷰 분석 상자에 N개의 리뷰를 동시에 보내고 각 요청의 결과를 표로 보여 줍니다."
    )
    parser.add_argument(
        "url", help="상자의 주소 또는 API 주소, 예: http://127.0.0.1:8000 또는 http://127.0.0.1:8000/api"
    )
    parser.add_argument("n", nargs="?", type=int, default=12, help="동시 요청 수 (1-200, 기본 12)")
    parser.add_argument(
        "path",
        nargs="?",
        default="all",
        help="naive | limited | batched | tickets | 1-4 | all (기본: 교재의 네 경로를 차례로); "
        "상자에 교재 밖 경로가 있으면 그 이름이나 번호도 (예: adaptive 또는 5)",
    )
    parser.add_argument("--same", action="store_true", help="같은 리뷰를 N번 (캐시 보기)")
    parser.add_argument("--json", metavar="FILE", help="요청별 원자료를 JSON으로 저장 (- 는 표준 출력)")
    parser.add_argument("--timeout", type=float, default=180.0, help="요청 하나의 제한 시간(초), 기본 180")
    parser.add_argument(
        "--retry",
        nargs="?",
        type=int,
        const=3,
        default=0,
        metavar="N",
        help="거절(429/503)되면 Retry-After 뒤에 다시 오기, 최대 N번 (기본 3): ②가 준 자리 보관 표(Seat-Hold)를 들고",
    )
    parser.add_argument(
        "-k", "--insecure", action="store_true", help="https 인증서를 확인하지 않음 (수업용 주소의 자체 인증서)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 200:
        parser.error("n must be between 1 and 200")
    if not 0 <= args.retry <= 10:
        parser.error("--retry must be between 0 and 10")
    if not args.url.startswith(("http://", "https://")):
        parser.error("url must start with http:// or https://")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.insecure:
        trust_any_certificate()
    base_url = box_root(args.url)
    try:
        reviews = check_box(base_url)
    except NotALab as exc:
        print(exc, file=sys.stderr)
        return 1
    learn_paths(base_url)
    chosen = path_named(args.path)
    if args.path != "all" and chosen is None:
        print(f"burst.py: error: unknown path {args.path!r}: this box serves {path_choices()}", file=sys.stderr)
        return 2
    paths = [key for key, p in PATHS.items() if p.handout] if chosen is None else [chosen]
    run_tag = "".join(random.choice(string.ascii_lowercase) for _ in range(3))
    report: dict[str, Any] = {"base_url": base_url, "n": args.n, "bursts": []}
    answered = 0
    out = sys.stderr if args.json == "-" else sys.stdout
    for number, path in enumerate(paths):
        if number:
            wait_until_idle(base_url)
        texts = [reviews[0]] * args.n if args.same else distinct_texts(reviews, args.n, f"{run_tag}{path[0]}")
        again = f", 거절되면 최대 {args.retry}번 다시 오기" if args.retry else ""
        fired = PATHS[path]
        print(f"\n{fired.label} — {args.n}개 동시 발사{again} → {base_url}{fired.route}", file=out, flush=True)
        rows = fire_burst(base_url, path, texts, timeout_s=args.timeout, retries=args.retry)
        summary = summarize(path, rows, retry=args.retry > 0)
        answered += sum(1 for r in rows if r.status is not None)
        print(table(path, rows, retry=args.retry > 0), file=out)
        print(summary_line(summary), file=out, flush=True)
        report["bursts"].append({"path": path, "summary": asdict(summary), "rows": [asdict(r) for r in rows]})
    if args.json:
        text = json.dumps(report, ensure_ascii=False, indent=2)
        if args.json == "-":
            print(text)
        else:
            with open(args.json, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
    if answered == 0:
        print(f"\n{base_url}에 연결하지 못했습니다: 주소와 포트, 상자가 켜져 있는지 확인하세요.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
