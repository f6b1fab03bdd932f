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

Every request of a run carries one student key (the cookie `lab_student`): the classroom front
counts its per-student limits by it, so a class behind one school address is many students, not
one. A 429 says who refused: the front ("한 사람이 너무 자주": this student, too often) or the box
("상자가 감당 못 함": everyone's). When the box died during a burst, burst.py says so, why (the box's
/api/stats), and how long until it answered again.

What the box answers is read defensively: at most 1 MiB per answer, JSON at most 32 deep, every
request within its deadline (a server trickling a byte a second cannot hold it) and the run within
its own, control characters stripped from anything printed, one line on anything odd.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import math
import random
import re
import secrets
import socket
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
    refused_by: str | None = None  # a 429's refuser: "front" (this student, too often) or "box" (everyone's)


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
    refused_by: str | None = None  # a 429's refuser: "front" (this student, too often) or "box" (everyone's)
    cut_by_death: bool = False  # no answer or a 502/504 because the box died under it
    odd_answer: bool = False  # an answer not read on (too slow, too big, too deep): `error` says which
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
    refused: dict[str, int] = field(default_factory=dict)  # 429s by refuser: "box", "front", "unknown"


# ------------------------------------------------------------------------- the student

# The classroom front keys its per-student limits on this cookie (app/front/nginx.conf); its value's shape.
STUDENT_COOKIE = "lab_student"
STUDENT_KEY = re.compile(r"[A-Za-z0-9_-]{16,64}")
# The student this run speaks for: sent as `Cookie: lab_student=KEY` on every request (None: no cookie).
STUDENT: str | None = None


def new_student_key() -> str:
    """A fresh key for one run (22 characters of the cookie's shape)."""
    return secrets.token_urlsafe(16)


# ------------------------------------------------------------------------- reading a box defensively

MAX_ANSWER_BYTES = 2**20  # an answer longer than this is not read on: no lab answer comes near it
MAX_JSON_DEPTH = 32  # the box's deepest answer (/api/stats) is 4 deep; deeper is not parsed at all
# ESC sequences (CSI, OSC, DCS/SOS/PM/APC, or ESC and one character) and C1's own CSI, then single characters
# that move the cursor, recolour, reorder (bidi overrides and isolates) or break lines in a terminal: C0, DEL, C1.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|.?)|\x9b[0-?]*[ -/]*[@-~]?",
    re.DOTALL,
)
_TERMINAL_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# In JSON text: the same, less C0 (json.dumps escapes those itself, and the indentation's newlines are C0).
_JSON_CONTROL = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class OddAnswer(ValueError):
    """An answer burst.py will not read on (too big, too deep); the message is one line for the student."""


class TooSlow(OddAnswer):
    """An answer that did not arrive whole within its request's deadline, or the run's deadline has passed."""


def clean(value: object, limit: int | None = None) -> str:
    """`value` as text a terminal shows as it is: escape sequences and control characters removed, cut to `limit`."""
    text = _TERMINAL_CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", str(value)))
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"


def say(text: str, file: Any = None) -> None:
    """Print `text` line by line, each line cleaned: whatever a box sent cannot reach the terminal raw."""
    print("\n".join(clean(line) for line in text.split("\n")), file=file or sys.stdout, flush=True)


def json_text(value: Any) -> str:
    """JSON that keeps Korean readable and escapes every character a terminal would obey (for `--json -`)."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return _JSON_CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def text_field(value: Any, limit: int = 80) -> str | None:
    """A string from a box's JSON, cleaned and cut; anything else (a list, a number, a nested object) is None."""
    return clean(value, limit) if isinstance(value, str) else None


def number_field(value: Any) -> float | None:
    """A finite number from a box's JSON; anything else (a string, a bool, NaN, 10**400) is None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def header_int(value: str | None, digits: int = 6) -> int | None:
    """`Retry-After: 3`, `X-Batch-Size: 4` → 3, 4; anything but a few ASCII digits is None."""
    if value and len(value) <= digits and value.isascii() and value.isdigit():
        return int(value)
    return None


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON text nests arrays and objects deeper than `limit` (brackets inside strings do not count).

    Checked before parsing: the parser recurses once per level, and `[[[[…` a million deep is a RecursionError.
    """
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > limit:
                return True
        elif ch in "]}":
            depth -= 1
    return False


# ------------------------------------------------------------------------- HTTP

# `-k`: the classroom front's certificate comes from its own local CA, which a laptop does not trust.
TLS_CONTEXT: ssl.SSLContext | None = None
# time.monotonic() when this run must end (`--run-timeout`); None: no deadline (functions imported by others).
RUN_ENDS: float | None = None


def trust_any_certificate() -> None:
    global TLS_CONTEXT
    TLS_CONTEXT = ssl.create_default_context()
    TLS_CONTEXT.check_hostname = False
    TLS_CONTEXT.verify_mode = ssl.CERT_NONE


def time_left(limit_s: float) -> float:
    """`limit_s`, or less when the run ends sooner; TooSlow once the run's deadline has passed."""
    if RUN_ENDS is None:
        return limit_s
    left = RUN_ENDS - time.monotonic()
    if left <= 0:
        raise TooSlow("실행 전체 제한 시간(--run-timeout)이 지나 보내지 않았습니다")
    return min(limit_s, left)


class Deadline:
    """Shuts every socket of one request once its time is up.

    A socket timeout bounds each wait for a byte, not the whole answer: a server trickling one byte a
    second (its TLS handshake, headers or body) would hold a read for ever. Shutting the socket from this
    watcher's thread ends the blocked read at once; it keeps shutting (a socket opened meanwhile, a
    redirect's) until cancelled.
    """

    def __init__(self, limit_s: float) -> None:
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._done = threading.Event()
        threading.Thread(target=self._watch, args=(limit_s,), name="burst-deadline", daemon=True).start()

    def watch(self, sock: socket.socket | None) -> None:
        if sock is not None:
            self._sockets.append(sock)

    def connection(self, kind: type[_WatchedConnection]) -> Callable[..., http.client.HTTPConnection]:
        """A connection factory for urllib's handlers: every socket its connections open is watched."""

        def make(host: str, **kwargs: Any) -> http.client.HTTPConnection:
            return kind(host, deadline=self, **kwargs)

        return make

    def cancel(self) -> None:
        self._done.set()

    def _watch(self, limit_s: float) -> None:
        if self._done.wait(limit_s):
            return
        self.expired = True
        while True:
            for sock in list(self._sockets):
                with contextlib.suppress(OSError, ValueError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)  # the descriptor itself, under TLS too
            if self._done.wait(0.1):
                return


class _WatchedConnection(http.client.HTTPConnection):
    """A connection whose sockets its Deadline can shut: the raw one from its first byte (a TLS handshake
    runs on it), the TLS one once connected (it takes the raw one's descriptor over). urllib drops
    `self.sock` once the head is read; the Deadline still holds it for the body."""

    def __init__(self, host: str, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(host, **kwargs)
        self.deadline = deadline
        self._create_connection = self._watched_socket  # http.client's own hook for opening the socket

    def _watched_socket(self, *args: Any, **kwargs: Any) -> socket.socket:
        sock = socket.create_connection(*args, **kwargs)
        self.deadline.watch(sock)
        return sock

    def connect(self) -> None:
        super().connect()
        self.deadline.watch(self.sock)


class _WatchedHTTPSConnection(_WatchedConnection, http.client.HTTPSConnection):
    pass


class _WatchedHTTP(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self.deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self.deadline.connection(_WatchedConnection), req)


class _WatchedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline, context: ssl.SSLContext | None) -> None:
        super().__init__(context=context)
        self.deadline = deadline
        self.tls = context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self.deadline.connection(_WatchedHTTPSConnection), req, context=self.tls)


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
    """One request on its own connection, whole within `timeout_s` (and the run's deadline), as the student.

    HTTP errors (429, 503, …) are answers, not exceptions. No answer raises OSError or HTTPException; an
    answer too slow, too big or too deep to read raises OddAnswer (a ValueError) with one line that says so.
    """
    limit_s = time_left(timeout_s)
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    sent = {"Content-Type": "application/json", **(headers or {})}
    if STUDENT:
        sent["Cookie"] = f"{STUDENT_COOKIE}={STUDENT}"
    request = urllib.request.Request(url, data=data, method=method, headers=sent)
    deadline = Deadline(limit_s)
    opener = urllib.request.build_opener(_WatchedHTTP(deadline), _WatchedHTTPS(deadline, TLS_CONTEXT))
    try:
        try:
            with opener.open(request, timeout=limit_s) as response:
                status, answer_headers, raw = response.status, response.headers, read_bounded(response)
        except urllib.error.HTTPError as exc:
            with contextlib.closing(exc):
                status, answer_headers = exc.code, exc.headers
                try:
                    raw = read_bounded(exc)
                except OSError:
                    raw = b""
    except (OSError, http.client.HTTPException) as exc:
        if deadline.expired or isinstance(exc, socket.timeout):
            raise TooSlow(f"답이 {limit_s:.3g}초 안에 다 오지 않아 끊었습니다") from exc
        raise
    finally:
        deadline.cancel()
    if deadline.expired:  # a shut socket may end a read short rather than fail it
        raise TooSlow(f"답이 {limit_s:.3g}초 안에 다 오지 않아 끊었습니다")
    return Answer(status, answer_headers, _json(raw))


def read_bounded(stream: Any) -> bytes:
    """At most MAX_ANSWER_BYTES of an answer; OddAnswer, without reading on, when it is longer."""
    raw = stream.read(MAX_ANSWER_BYTES + 1)
    if len(raw) > MAX_ANSWER_BYTES:
        raise OddAnswer(f"답이 {MAX_ANSWER_BYTES // 2**20} MiB 를 넘어 더 읽지 않았습니다")
    return bytes(raw)


def _json(raw: bytes) -> Any:
    """The answer's JSON, or None when it is not JSON (an HTML error page); OddAnswer when it nests too deep."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if too_deep(text):
        raise OddAnswer(f"JSON 이 {MAX_JSON_DEPTH}단보다 깊게 겹쳐 있어 읽지 않았습니다")
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
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

    Raises NotALab when nothing answers (or not within `timeout_s`) or the answer is 404 (a wrong path:
    every burst request would be a 404 too). Any other answer counts as a lab; unreadable samples fall
    back to the built-in list, with one line on stderr when the answer was odd (too big, too deep).
    """
    url = root + "/api/samples"
    try:
        answer = request_json("GET", url, timeout_s=timeout_s)
    except TooSlow as exc:
        raise NotALab(f"{url} 이(가) {exc}.\n상자가 너무 느리거나 실습 상자가 아닙니다. {_instead(root)}") from exc
    except OddAnswer as exc:
        say(f"{url} 의 예시 리뷰를 읽지 않았습니다: {exc}. 내장 리뷰로 보냅니다.", sys.stderr)
        return FALLBACK_REVIEWS
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
    listed = answer.body if isinstance(answer.body, list) else []
    texts = [item.get("text") for item in listed[:MAX_SAMPLES] if isinstance(item, dict)]
    return [text for text in texts if isinstance(text, str) and 0 < len(text) <= MAX_SAMPLE_CHARS] or FALLBACK_REVIEWS


MAX_SAMPLES = 100  # sample reviews taken from the box
MAX_SAMPLE_CHARS = 2000  # the box's own cap on a review (LAB_MAX_TEXT_CHARS' default)
MAX_PATHS = 20  # paths learned from the box (numbered ① … ⑳)
PATH_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
PATH_ROUTE = re.compile(r"/api/[A-Za-z0-9._~/-]{1,100}")


def paths_from(listed: Any) -> dict[str, BoxPath]:
    """The box's GET /api/paths answer as burst.py's table; entries it cannot read are left out.

    A name, route and number of the shapes a lab uses, a label without control characters: a box's
    answer can neither write to the student's terminal nor send a burst off the box.
    """
    found: dict[str, BoxPath] = {}
    for item in listed[: 2 * MAX_PATHS] if isinstance(listed, list) else []:
        try:
            name, route, label = item["name"], item["route"], text_field(item["label"], 24)
            number = int(unicodedata.numeric(str(item["number"])))
            readable = isinstance(name, str) and PATH_NAME.fullmatch(name) and isinstance(route, str)
            if not readable or not PATH_ROUTE.fullmatch(route) or not label or not 1 <= number <= MAX_PATHS:
                continue
            found[name] = BoxPath(
                number=number,
                label=label,
                route=route,
                ticket=item["answer"] == "ticket",
                handout=bool(item["handout"]),
            )
        except (TypeError, KeyError, ValueError):
            continue
    return dict(list(found.items())[:MAX_PATHS])


def learn_paths(root: str, timeout_s: float = 10.0) -> None:
    """Add the paths this box serves beyond the handout to `PATHS`; a box that cannot say keeps the four.

    A box that answers 200 with something odd (too big, too deep, too slow, unreadable entries) gets one line.
    """
    url = root + "/api/paths"
    try:
        answer = request_json("GET", url, timeout_s=timeout_s)
    except OddAnswer as exc:
        say(f"{url} 의 경로 목록을 읽지 않았습니다: {exc}. 교재의 네 경로만 씁니다.", sys.stderr)
        return
    except (OSError, ValueError, http.client.HTTPException):
        return
    if answer.status != 200:
        return
    found = paths_from(answer.body)
    if not isinstance(answer.body, list):
        say(f"{url} 의 답이 경로 목록이 아닙니다. 교재의 네 경로만 씁니다.", sys.stderr)
    elif len(found) < len(answer.body):
        say(f"{url} 의 경로 {len(answer.body) - len(found)}개는 읽을 수 없어 건너뜁니다.", sys.stderr)
    PATHS.update(found)


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

# Who refused a 429, by its body's code (app/errors.py): the classroom front's per-student limit,
# or the box itself. The handout: "같은 번호, 다른 이유".
FRONT_CODES = frozenset({"front_limit"})
BOX_CODES = frozenset({"box_full", "job_queue_full"})
REFUSED_WORDS = {"front": "한 사람이 너무 자주", "box": "상자가 감당 못 함"}
FRONT_WAIT_S = 1  # a front refusal without a Retry-After comes back after this
MAX_RETRY_AFTER_S = 120  # a Retry-After longer than this is not waited out (the student would think it hung)


def refused_by(status: int, body: dict[str, Any]) -> str | None:
    """`front` or `box` for a 429 that names its refuser (`error`, or `reason` beside a general code); else None."""
    if status != 429:
        return None
    codes = {body.get("error"), body.get("reason")}
    if codes & FRONT_CODES:
        return "front"
    return "box" if codes & BOX_CODES else None


def follow_ticket(base_url: str, row: Row, job: dict[str, Any], timeout_s: float) -> None:
    """Poll the ticket until done or failed (often when its ETA is near, seldom when far)."""
    deadline = time.monotonic() + timeout_s
    answer_headers: Message | None = None
    job_id = text_field(job.get("job_id"), 200)
    if not job_id:
        row.job_status, row.error = "failed", "202 에 번호표(job_id)가 없습니다"
        return
    while job.get("status") not in ("done", "failed"):
        if time.monotonic() > deadline:
            row.job_status, row.error = "failed", "client gave up following the ticket"
            return
        eta = number_field(job.get("eta_seconds"))
        time.sleep(min(1.0, max(0.25, (eta if eta is not None else 0.5) / 2)))
        url = f"{base_url}/api/queue/jobs/{urllib.parse.quote(job_id, safe='')}"
        try:
            answer = request_json("GET", url, timeout_s=min(30.0, max(1.0, deadline - time.monotonic())))
        except (OSError, http.client.HTTPException, TooSlow):
            if RUN_ENDS is not None and time.monotonic() >= RUN_ENDS:
                row.job_status, row.error = "failed", "실행 전체 제한 시간이 지나 번호표를 그만 따라갑니다"
                return
            continue  # a lost poll is retried; the job itself is safe on the box
        except OddAnswer as exc:
            row.job_status, row.error = "failed", f"번호표 조회: {exc}"
            return
        if answer.status != 200 or not isinstance(answer.body, dict):
            row.job_status, row.error = "failed", f"poll answered {answer.status}"
            return
        job, answer_headers = answer.body, answer.headers
    _finish_ticket(row, job, answer_headers)


def _finish_ticket(row: Row, job: dict[str, Any], headers: Message | None) -> None:
    row.job_status = text_field(job.get("status"), 20)
    row.error = text_field(job.get("error")) or row.error
    timing = parse_server_timing(headers.get("Server-Timing") if headers is not None else None)
    waited, inferred = number_field(job.get("waited_ms")), number_field(job.get("inference_ms"))
    row.wait_ms = timing.get("wait", waited)
    row.infer_ms = timing.get("infer", inferred)
    if waited is not None:
        row.actual_s = (waited + (inferred or 0.0)) / 1000
    result = job.get("result")
    # The handout's shape is {"topics": [...]}; older boxes answered the bare list.
    topics = result.get("topics") if isinstance(result, dict) else result
    if isinstance(topics, list) and topics and isinstance(topics[0], dict):
        row.top_topic = text_field(topics[0].get("label"), 40)


def fire_one(base_url: str, path: str, row: Row, timeout_s: float) -> None:
    """Send one review and fill `row`; a connection error or an odd answer is recorded on the row, never raised."""
    url = base_url + PATHS[path].route
    row.started_at = time.perf_counter()
    token, row.hold_token = row.hold_token, None
    hold = {"Seat-Hold": token} if token else None
    try:
        answer = request_json("POST", url, {"text": row.text}, timeout_s=timeout_s, headers=hold)
    except OddAnswer as exc:  # too slow, too big, too deep
        row.error, row.odd_answer = str(exc), True
        row.round_trip_ms = (time.perf_counter() - row.started_at) * 1000
        return
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
    row.batch_size = header_int(answer.headers.get("X-Batch-Size"))
    row.retry_after_s = header_int(answer.headers.get("Retry-After"))
    row.refused_by = refused_by(answer.status, body)
    # The front refused before the box saw the token: the seat it holds is still this student's to claim.
    row.hold_token = answer.headers.get("Seat-Hold") or (token if row.refused_by == "front" else None)
    row.hold_result = answer.headers.get("Seat-Hold-Result")
    row.error = text_field(body.get("error"), 40)
    if isinstance(body.get("top"), dict):
        row.top_topic = text_field(body["top"].get("label"), 40)
    if PATHS[path].ticket and answer.status == 202:
        row.ticket_ms, row.eta_s = turnaround_ms, number_field(body.get("eta_seconds"))
        if body.get("status") in ("done", "failed"):  # answered from the cache at once
            _finish_ticket(row, body, answer.headers)
        else:
            follow_ticket(base_url, row, body, timeout_s)
    row.round_trip_ms = (time.perf_counter() - row.started_at) * 1000


def comes_back_after(row: Row) -> float | None:
    """Seconds a refused row waits before its next try; None when it should not come back.

    The box's refusals (429/503) come back only when they say when; the front's 429 always does, after its
    Retry-After (1 s when it gives none). A Retry-After past MAX_RETRY_AFTER_S is not waited out.
    """
    if row.refused_by == "front":
        wait = row.retry_after_s if row.retry_after_s is not None else FRONT_WAIT_S
    elif row.status in (429, 503) and row.retry_after_s is not None:
        wait = row.retry_after_s
    else:
        return None
    return float(wait) if wait <= MAX_RETRY_AFTER_S else None


def record_attempt(row: Row, first_sent: float) -> None:
    hold = "held" if row.hold_token and row.refused_by != "front" else row.hold_result
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
            refused_by=row.refused_by,
        )
    )


def fire_until_served(
    base_url: str, path: str, row: Row, timeout_s: float, retries: int, jitter: Callable[[], float]
) -> None:
    """`fire_one`, then while refused with a Retry-After and tries are left: wait it out (plus jitter), try again.

    The row ends as its last try; `started_at` and `round_trip_ms` span all of them (the student's view).
    A return that would come after the run's deadline is not made.
    """
    first_sent = 0.0
    for attempt in range(retries + 1):
        for name in ("status", "error", "wait_ms", "infer_ms", "batch_size", "top_topic", "cache", "retry_after_s"):
            setattr(row, name, None)
        row.hold_result = row.refused_by = None
        row.odd_answer = False
        fire_one(base_url, path, row, timeout_s)
        first_sent = first_sent or row.started_at
        record_attempt(row, first_sent)
        wait = comes_back_after(row)
        if attempt == retries or wait is None:
            break
        pause = wait + jitter()
        if RUN_ENDS is not None and time.monotonic() + pause >= RUN_ENDS:
            break
        time.sleep(pause)
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
        try:
            fire_until_served(
                base_url, path, row, timeout_s, retries, jitter or (lambda: random.uniform(0, RETRY_JITTER_S))
            )
        except Exception as exc:  # whatever a box answers, a row says it; a thread never prints a traceback
            row.error = clean(f"{type(exc).__name__}: {exc}", 80)

    threads = [threading.Thread(target=worker, args=(row,), name=f"burst-{row.index}", daemon=True) for row in rows]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return rows


# ------------------------------------------------------------------------- the box's deaths

LOOK_S = 5.0  # one look at /api/stats or /health
HEALTH_EVERY_S = 0.25
BACK_LIMIT_S = 120.0  # how long to wait for a dead box to answer again (its restarts back off up to 30 s)


@dataclass
class BoxLife:
    """What /api/stats' `box` says of the box's deaths (app/inside/report.py `stats`)."""

    deaths: int
    cause: str | None  # the last death's: "memory_cap", "signal 9", "exit 1", ...


@dataclass
class Death:
    """The box died during a burst (or stopped answering under it)."""

    times: int  # deaths during the burst, by /api/stats (0: it never answered again, so it could not say)
    cause: str | None
    back_after_s: float | None  # from the first answer it cut until /health answered 200; None: not measured
    total: int | None  # deaths since the lab started
    cut: int  # rows it cut (502, 504, no answer)
    waited_s: float = 0.0  # how long /health was polled in vain, when it never answered


def box_life(base_url: str) -> BoxLife | None:
    """The box's death count and last cause, or None when /api/stats cannot say (no box section, no answer)."""
    try:
        body = request_json("GET", base_url + "/api/stats", timeout_s=LOOK_S).body
    except (OSError, ValueError, http.client.HTTPException):
        return None
    box = body.get("box") if isinstance(body, dict) else None
    deaths = box.get("deaths") if isinstance(box, dict) else None
    if not isinstance(box, dict) or not isinstance(deaths, int) or isinstance(deaths, bool) or deaths < 0:
        return None
    last = box.get("last_death")
    return BoxLife(deaths, text_field(last.get("cause"), 40) if isinstance(last, dict) else None)


def cut_off(row: Row) -> bool:
    """No answer, or the front's answer for a box it cannot reach: what a death does to the requests under it."""
    return (row.status is None and not row.odd_answer) or row.status in (502, 504)


def answered_again(base_url: str, limit_s: float) -> float | None:
    """perf_counter() when /health first answered 200, asked every HEALTH_EVERY_S for at most `limit_s`."""
    end = time.perf_counter() + limit_s
    while True:
        try:
            if request_json("GET", base_url + "/health", timeout_s=LOOK_S).status == 200:
                return time.perf_counter()
        except (OSError, ValueError, http.client.HTTPException):
            pass
        if time.perf_counter() + HEALTH_EVERY_S >= end or (RUN_ENDS is not None and time.monotonic() >= RUN_ENDS):
            return None
        time.sleep(HEALTH_EVERY_S)


def look_for_death(
    base_url: str, before: BoxLife | None, rows: list[Row], limit_s: float = BACK_LIMIT_S
) -> Death | None:
    """After a burst: did the box die under it? Its rows that were cut are marked when it did.

    When requests were cut, /health is asked until it answers (at most `limit_s`): the time from the first cut
    answer is how long the box was gone, as a student saw it. Then /api/stats says whether its death count rose.
    """
    base_url = box_root(base_url)
    if RUN_ENDS is not None and time.monotonic() >= RUN_ENDS:
        return None  # the run's time is up: no time left to tell a death from a hang
    cut = [r for r in rows if cut_off(r)]
    back_after_s: float | None = None
    if cut:
        first_cut = min(r.started_at + (r.round_trip_ms or 0.0) / 1000 for r in cut)
        looked = time.perf_counter()
        back = answered_again(base_url, limit_s)
        if back is None:
            for row in cut:
                row.cut_by_death = True
            return Death(0, None, None, None, len(cut), waited_s=time.perf_counter() - looked)
        back_after_s = max(0.0, back - first_cut)
    after = box_life(base_url)
    if before is None or after is None or after.deaths <= before.deaths:
        return None
    for row in cut:
        row.cut_by_death = True
    return Death(after.deaths - before.deaths, after.cause, back_after_s, after.deaths, len(cut))


# ------------------------------------------------------------------------- summarising


def quantile(values: list[float], q: float) -> float | None:
    """Nearest-rank quantile (the page uses the same rule)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def status_key(row: Row) -> str:
    if row.status is not None:
        return str(row.status)
    return "odd" if row.odd_answer else "error"


def summarize(path: str, rows: list[Row], retry: bool = False) -> Summary:
    """Counts, round trips, throughput; with `retry`, also how long the whole crowd took and the tries it cost."""
    counts: dict[str, int] = {}
    refused: dict[str, int] = {}
    for row in rows:
        counts[status_key(row)] = counts.get(status_key(row), 0) + 1
        if row.status == 429:
            refused[row.refused_by or "unknown"] = refused.get(row.refused_by or "unknown", 0) + 1
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
        refused=refused,
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


def note_text(row: Row) -> str:
    """The last column: the top topic, or why there is none (who refused, the box's death, the error)."""
    if row.cut_by_death:
        return "상자가 죽어 끊김"
    if row.refused_by is not None:
        return REFUSED_WORDS[row.refused_by]
    return row.top_topic or row.error or ""


def status_text(row: Row) -> str:
    if row.status is None:
        return "읽지 않음" if row.odd_answer else "연결오류"
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
    ("1위 주제", 20, False, lambda r: note_text(r)),
]
LAST_COLUMN_CHARS = 60
TICKET_COLUMNS: list[tuple[str, int, bool, Callable[[Row], str]]] = [
    ("202까지", 8, True, lambda r: ms(r.ticket_ms)),
    ("약속ETA", 8, True, lambda r: "-" if r.eta_s is None else f"{r.eta_s:.1f}s"),
    ("실제", 7, True, lambda r: "-" if r.actual_s is None else f"{r.actual_s:.1f}s"),
]


def table(path: str, rows: list[Row], retry: bool = False) -> str:
    """One line per request; with `retry`, every try of a row that came back on the line under it.

    The last column (the top topic, or why there is none) is not cut to its width: nothing follows it.
    """
    columns = COLUMNS[:-1] + (TICKET_COLUMNS if PATHS[path].ticket else []) + COLUMNS[-1:]
    lines = ["  ".join(fit(title, w, right) for title, w, right, _ in columns).rstrip()]
    for row in rows:
        cells = [fit(clean(cell(row)), w, right) for _, w, right, cell in columns[:-1]]
        lines.append("  ".join([*cells, clean(columns[-1][3](row), LAST_COLUMN_CHARS)]).rstrip())
        if retry and len(row.attempts) > 1:
            lines.append(attempts_line(row))
    return "\n".join(lines)


def summary_line(s: Summary) -> str:
    counts = " ".join(f"{status}×{n}" for status, n in sorted(s.counts.items()))
    parts = [f"{PATHS[s.path].label}: {counts}"]
    if s.refused:
        words = {**REFUSED_WORDS, "unknown": "까닭 모름"}
        parts.append("429 = " + " + ".join(f"{words[who]}×{n}" for who, n in sorted(s.refused.items())))
    parts += [
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
    if a.refused_by is not None:
        status += f" {REFUSED_WORDS[a.refused_by]}"
    if a.hold in HOLD_WORDS:
        status += f" {HOLD_WORDS[a.hold]}"
    if a.status == 200:
        status += f" (대기 {ms(a.wait_ms)}, 추론 {ms(a.infer_ms)})"
    return f"{a.at_ms / 1000:.2f}s {status}"


def attempts_line(row: Row) -> str:
    return "    ↳ " + " → ".join(attempt_text(a) for a in row.attempts)


# Once per run, when the front refused: the handout's distinction, so a student knows whose 429 it was.
TWO_429S = (
    "429 는 두 가지입니다 — '한 사람이 너무 자주': 수업 앞단이 이 학생 키의 요청이 너무 잦아 막음 "
    "(내 몫, 잠시 뒤 다시) · '상자가 감당 못 함': 상자가 가득 참 (모두의 몫). 같은 번호, 다른 이유."
)


def cause_text(cause: str | None) -> str:
    """The box's death cause in the page's words: memory_cap → 메모리 상한, signal 9 → 시그널 9, exit 1 → 종료 코드 1
    (app/box/memory_cap.py `death_cause`)."""
    if cause is None:
        return "까닭 모름"
    if cause == "memory_cap":
        return "메모리 상한"
    kind, _, number = cause.partition(" ")
    return {"signal": f"시그널 {number}", "exit": f"종료 코드 {number}"}.get(kind, cause)


def death_line(d: Death) -> str:
    """`상자가 죽었습니다 (메모리 상한) → 7.3초 뒤 다시 살아남 …`, as the page's banner says it."""
    if not d.times:
        silent = f"그 뒤 {d.waited_s:.0f}초 동안 /health 가 답하지 않았습니다"
        return f"상자가 죽은 것 같습니다: 요청 {d.cut}개가 끊겼고, {silent}"
    died = "상자가 죽었습니다" if d.times == 1 else f"상자가 {d.times}번 죽었습니다"
    back = (
        "다시 살아남"
        if d.back_after_s is None
        else f"{d.back_after_s:.1f}초 뒤 다시 살아남 (끊긴 첫 요청부터 /health 가 답할 때까지)"
    )
    parts = [f"{died} ({cause_text(d.cause)}) → {back}"]
    if d.cut:
        parts.append(f"끊긴 요청 {d.cut}개")
    if d.total:
        parts.append(f"실습 시작 뒤 {d.total}번 죽음")
    return " · ".join(parts)


# ------------------------------------------------------------------------- the command


def wait_until_idle(base_url: str, limit_s: float = 120.0) -> None:
    """Let the previous path's work drain, so one path's burst does not pay for another's."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            stats = request_json("GET", base_url + "/api/stats", timeout_s=LOOK_S).body
            lane, jobs = stats["lane"], stats["jobs"]
            busy = sum(p.get("in_flight", 0) + p.get("waiting", 0) for p in stats["paths"].values())
            if not lane["busy"] and lane["pending_reviews"] == 0 and busy == 0 and not jobs.get("queued"):
                return
        except (OSError, ValueError, TypeError, KeyError, AttributeError, http.client.HTTPException):
            return  # no stats to read (or not as a lab writes them): do not block the student on them
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
    parser.add_argument("--run-timeout", type=float, default=1800.0, help="실행 전체의 제한 시간(초), 기본 1800 (30분)")
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
        "--student",
        metavar="KEY",
        help="학생 키 (영문자·숫자·_·- 16-64자): 여러 번 실행해도 같은 학생으로 셉니다. 없으면 실행마다 새 키",
    )
    parser.add_argument(
        "-k", "--insecure", action="store_true", help="https 인증서를 확인하지 않음 (수업용 주소의 자체 인증서)"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.n <= 200:
        parser.error("n must be between 1 and 200")
    if not 0 <= args.retry <= 10:
        parser.error("--retry must be between 0 and 10")
    if not 0 < args.timeout <= 3600 or not 0 < args.run_timeout <= 86400:
        parser.error("--timeout 은 0 초과 3600 이하, --run-timeout 은 0 초과 86400 이하여야 합니다")
    if args.student is not None and not STUDENT_KEY.fullmatch(args.student):
        parser.error(
            f"--student 의 키는 영문자·숫자·_·- 로만 된 16-64자여야 합니다 (받은 것: {len(args.student)}자 "
            f"{clean(args.student, 70)!r}). 예: --student {new_student_key()}"
        )
    if not args.url.startswith(("http://", "https://")):
        parser.error("url must start with http:// or https://")
    return args


def main(argv: list[str] | None = None) -> int:
    """The command: one line on anything that goes wrong, never a traceback in a student's terminal."""
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except KeyboardInterrupt:
        say("\n중단했습니다 (Ctrl-C).", sys.stderr)
        return 130
    except Exception as exc:
        say(f"burst.py 가 뜻밖의 일로 멈췄습니다: {type(exc).__name__}: {clean(exc, 200)}", sys.stderr)
        return 1


def run(argv: list[str]) -> int:
    global RUN_ENDS, STUDENT
    args = parse_args(argv)
    RUN_ENDS = time.monotonic() + args.run_timeout
    STUDENT = args.student or new_student_key()
    if args.insecure:
        trust_any_certificate()
    base_url = box_root(args.url)
    try:
        reviews = check_box(base_url)
    except NotALab as exc:
        say(str(exc), sys.stderr)
        return 1
    learn_paths(base_url)
    chosen = path_named(args.path)
    if args.path != "all" and chosen is None:
        say(f"burst.py: error: unknown path {args.path!r}: this box serves {path_choices()}", sys.stderr)
        return 2
    paths = [key for key, p in PATHS.items() if p.handout] if chosen is None else [chosen]
    run_tag = "".join(random.choice(string.ascii_lowercase) for _ in range(3))
    report: dict[str, Any] = {"base_url": base_url, "n": args.n, "student": STUDENT, "bursts": []}
    answered = 0
    front_refused = False
    out = sys.stderr if args.json == "-" else sys.stdout
    kept = "--student 로 정한 키" if args.student else f"다음에도 같은 키로: --student {STUDENT}"
    say(f"학생 키: {STUDENT}  ({kept})", out)
    for number, path in enumerate(paths):
        if RUN_ENDS is not None and time.monotonic() >= RUN_ENDS:
            break
        if number:
            wait_until_idle(base_url)
        texts = [reviews[0]] * args.n if args.same else distinct_texts(reviews, args.n, f"{run_tag}{path[0]}")
        again = f", 거절되면 최대 {args.retry}번 다시 오기" if args.retry else ""
        fired = PATHS[path]
        say(f"\n{fired.label} — {args.n}개 동시 발사{again} → {base_url}{fired.route}", out)
        before = box_life(base_url)
        rows = fire_burst(base_url, path, texts, timeout_s=args.timeout, retries=args.retry)
        death = look_for_death(base_url, before, rows)
        summary = summarize(path, rows, retry=args.retry > 0)
        answered += sum(1 for r in rows if r.status is not None or r.odd_answer or r.cut_by_death)
        front_refused = front_refused or "front" in summary.refused
        say(table(path, rows, retry=args.retry > 0), out)
        say(summary_line(summary), out)
        if death is not None:
            say(death_line(death), out)
        report["bursts"].append(
            {
                "path": path,
                "summary": asdict(summary),
                "box_death": None if death is None else asdict(death),
                "rows": [asdict(r) for r in rows],
            }
        )
    if front_refused:
        say(TWO_429S, out)
    if args.json:
        text = json_text(report)
        if args.json == "-":
            print(text, flush=True)
        else:
            with open(args.json, "w", encoding="utf-8") as handle:
                handle.write(text + "\n")
    if RUN_ENDS is not None and time.monotonic() >= RUN_ENDS:
        say(f"\n실행 전체 제한 시간({args.run_timeout:.0f}초, --run-timeout)이 지나 멈췄습니다.", sys.stderr)
        return 1
    if answered == 0:
        say(f"\n{base_url}에 연결하지 못했습니다: 주소와 포트, 상자가 켜져 있는지 확인하세요.", sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
