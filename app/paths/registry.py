"""The lab's paths as data: each path describes itself once here, and metrics, stats, the page and the tools read it.

A new path (an adaptive limit, LIFO, priority…) is its strategy module (an owner with `spec`,
`load()` and, for a direct path, `run`, and the module's `build(parts)` that makes it), one `PathSpec`
line in `PATHS` and its note on the page; docs/architecture.md lists the files. app/lab.py builds every
path from here and names none. A route with more to say than "score this review" (a header, a ticket)
is declared by hand in app/api/; a direct path without one gets its route from its `PathSpec`
(app/api/predict.py). `PathSpec.route` names the one that submits work, and a test checks that the app has it.

This module imports nothing from the server, so clients (bench, tools) can read it too.
"""

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Knob:
    """A setting an instructor may turn for one path (or the box): its `Settings` field, its bounds, its unit
    and step, and how the pages name and quote it, so a new knob needs no table in their scripts.

    Its values are low, low + step, … up to high: the API and the knobs file take exactly those
    (app/knobs/board.py), and the instructor page's input steps by it."""

    setting: str  # the Settings field (and LAB_<SETTING> in the environment)
    low: float
    high: float
    unit: str  # "s", "reviews", "seats", "jobs", "bytes", "on/off"
    step: float  # in the unit (bytes: 1 MiB, what the page types); a whole step from a whole low: whole numbers
    label: str  # Korean, after its path's mark (or "상자:"), with the unit the instructor types (bytes: MiB)
    limit: str = ""  # the key of limits() and of the page's data-limit spans that quote it ("" for none)
    scale: float = 1  # those spans show value × scale (1000: seconds as ms), rounded unless 1
    retune: str = ""  # how a running lab turns it: the keyword of its path owner's `retune` ("" = not live)

    @property
    def whole(self) -> bool:
        """Whether it counts (seats, jobs, a batch's size): its owner takes an int."""
        return self.step == int(self.step) and self.low == int(self.low)

    def allows(self, value: float) -> bool:
        return self.low <= value <= self.high and self.on_step(value)

    def on_step(self, value: float) -> bool:
        """Whether `value` is low + a whole number of steps (to a billionth of a step: 1.5 is 0.5 + 10 × 0.1)."""
        steps = (value - self.low) / self.step
        return abs(steps - round(steps)) <= 1e-9 * max(1.0, abs(steps))


@dataclass(frozen=True, slots=True)
class GivesUp:
    """What a path trades away, as the comparison card says it to students (static/js/compare.js).

    `{p95}`-style names are that burst's numbers (the names compare.js's `facts` defines); a `[…]` part is left
    out when a name in it is unknown for the burst. `none_refused`, if given, is said instead when none was refused.
    """

    said: str
    none_refused: str = ""
    counts_refusals: bool = False  # `said` counts the refused already, so the card adds no "실패/거절 N개"


# The default: a path that refuses gives up requests.
REFUSED_REQUESTS = GivesUp(
    "포기한 것: {refused}/{size}개 요청. [{quick_429}개는 바로 거절(429), ]"
    "[{slow_429}개는 거절(429, 가장 늦은 거절 {slowest_429}), ]"
    "[{late_503}개는 서버에서 최대 {longest_503} 기다린 뒤 거절(503), ]"
    "[{unexplained}거절, ]받은 {served}개만 제때 처리",
    "포기한 것: 이번엔 없음. 자리가 남아 {served}개 모두 받음 (더 몰리면 거절)",
    counts_refusals=True,
)


@dataclass(frozen=True, slots=True)
class PathSpec:
    """What a path is, independent of any running lab."""

    name: str  # the `path` label in metrics, the key in /api/stats, the radio's value
    number: int  # its place in display order: ① … ⑤
    blurb: str  # Korean, beside the radio; `{seats}`-style names are filled from app/contract/schema.py's limits()
    route: str  # the POST that submits work to it (declared in app/api/)
    statuses: tuple[int, ...]  # the answers it is built to give, exported at 0 from the start
    refusals: tuple[str, ...]  # its reasons in review_rejections_total, exported at 0 from the start
    knobs: tuple[Knob, ...] = ()
    # For the page: what it trades away (the comparison card's sentence), whether its answers carry
    # X-Batch-Size (the mean batch is shown) and whether its /api/stats entry has seats_taken/capacity.
    gives_up: GivesUp = REFUSED_REQUESTS
    batches: bool = False
    seats: bool = False
    handout: bool = False  # one of the printed handout's four; the rest are marked beyond it
    module: str = ""  # the module whose `build(parts)` makes its owner (app/paths/parts.py); "" = app.paths.<name>

    @property
    def builder(self) -> str:
        """The module app/lab.py imports to build this path (named, not imported, so clients read this file alone)."""
        return self.module or f"app.paths.{self.name}"

    @property
    def mark(self) -> str:
        """①, ②, … (circled digits run on to ⑳)."""
        return chr(0x2460 + self.number - 1)

    @property
    def label(self) -> str:
        return f"{self.mark} {self.name}"

    @property
    def answer(self) -> str:
        """ "ticket" if it answers 202 with a ticket to follow, else "direct" (the result in the answer)."""
        return "ticket" if 202 in self.statuses else "direct"


@dataclass(frozen=True, slots=True)
class Load:
    """One path's load at one moment: in inference now, admitted and waiting, refused so far by reason."""

    in_flight: int
    waiting: int
    refusals: dict[str, int]
    details: dict[str, int] = field(default_factory=dict)  # the path's own numbers, shown in /api/stats


class LabPath(Protocol):
    """What a running lab needs from each of its paths: its description and its load."""

    @property
    def spec(self) -> PathSpec: ...

    def load(self) -> Load: ...


# Display order. Each entry is a whole path as the rest of the lab sees it.
PATHS: tuple[PathSpec, ...] = (
    PathSpec(
        "naive", 1, "바로 추론", "/api/naive/predict", (200,), ("memory_would_not_fit",),
        (Knob("naive_memory_guard", 0, 1, "on/off", 1, "메모리 보호 (1 = 켬, 0 = 끔)"),),
        gives_up=GivesUp(
            "포기한 것: 빠른 답. 아무도 거절하지 않았지만 모두가 CPU를 나눠 써 p95 {p95}[ (가장 빠른 답 {fastest})]"
            "[, 메모리 +{memory_mib} MiB][ (상한의 {memory_pct}%까지)]"
        ),
        handout=True,
    ),
    PathSpec(
        "limited", 2, "1개 + 대기석 {seats}", "/api/limited/predict", (200, 429, 503),
        ("seats_full", "waited_too_long"),
        (
            Knob("limited_seats", 0, 50, "seats", 1, "대기석 (개)", "seats", retune="seats"),
            Knob("limited_max_wait_s", 1, 120, "s", 0.1, "최대 대기 (초)", "max_wait_s", retune="max_wait_s"),
        ),
        gives_up=REFUSED_REQUESTS, seats=True, handout=True,
    ),
    PathSpec(
        "batched", 3, "모아서 한 번에", "/api/batched/predict", (200,), ("queue_too_long",),
        (
            Knob("batch_window_s", 0, 1, "s", 0.001, "모으는 시간 (초)", "window_ms", 1000, retune="window_s"),
            Knob("batch_max", 1, 64, "reviews", 1, "최대 묶음 (개)", "batch_max", retune="max_size"),
            Knob("batch_max_wait_s", 0, 120, "s", 0.1, "예상 대기 상한 (초, 0 = 끔)", "batch_max_wait_s",
                 retune="max_wait_s"),
        ),
        gives_up=GivesUp(
            "포기한 것: 각자의 빠른 답. 묶음(평균 {mean_batch}개)이 모여 출발하고, "
            "묶음 안에서는 짧은 리뷰부터 끝나는 대로 답하므로 긴 리뷰는 묶음 끝까지 기다림, p50 {p50}"
        ),
        batches=True, handout=True,
    ),
    PathSpec(
        "tickets", 4, "번호표", "/api/queue/jobs", (202, 429), ("job_queue_full",),
        (
            Knob("queue_max_jobs", 1, 1000, "jobs", 1, "번호표 상한 (장)", "queue_max_jobs",
                 retune="queue_max_jobs"),
        ),
        gives_up=GivesUp(
            "포기한 것: 한 번에 받는 답. 번호표를 받고 결과를 따로 기다려야 함, "
            "결과까지 p95 {p95}[, 약속보다 평균 {eta_late}초]"
        ),
        handout=True, module="app.paths.ticket_roles",
    ),
    PathSpec(
        "adaptive", 5, "줄 서는 시간으로 거절 (교재 밖)", "/api/adaptive/predict", (200, 429),
        ("over_target",),
        (
            Knob("adaptive_target_reviews", 0.5, 10, "reviews", 0.1, "서 있는 줄의 목표 (리뷰 건수 × 잰 처리 시간)",
                 "adaptive_target_reviews", retune="target_reviews"),
            Knob("adaptive_drain_reviews", 1, 20, "reviews", 0.5, "빠지는 줄의 시작 약속 (리뷰 건수 × 잰 처리 시간)",
                 "adaptive_drain_reviews", retune="drain_reviews"),
            Knob("adaptive_interval_reviews", 1, 60, "reviews", 0.1, "줄을 지켜보는 간격 (리뷰 건수 × 잰 처리 시간)",
                 "adaptive_interval_reviews", retune="interval_reviews"),
        ),
        gives_up=GivesUp(
            "포기한 것: 먼저 온 순서. {refused}/{size}개 거절(가장 늦은 거절 {slowest_429}), 줄이 서 있으면 새로 온 "
            "요청부터 처리해 먼저 온 요청은 약속한 시간 안에서 뒤로 밀리고, 한 사람의 두 번째 요청부터는 "
            "친구들의 첫 요청 뒤에 판단함, 받은 {served}개 p95 {p95}",
            "포기한 것: 이번엔 없음. 줄이 목표 안에 빠져 {served}개 모두 받음 (더 몰리면 거절)",
        ),
    ),
)  # fmt: skip


MIB = 2**20
# The box's own knobs (no path's: every path runs on the box), turned by the same board as the paths'.
# 0.5 s: the page's panel is pushed twice a second, so a shorter review can pass unseen, and the twin
# costs the lab's hosts 0.6-0.7 CPU s anyway (docs/box.md: the loop would give a whole core and say so).
# 5 s: a burst of 12 on ① then takes a minute, half of burst.py's 120 s timeout; the CPU quota (at
# least 1 ms per 100 ms period) still slows a host 50x faster than that.
BOX_TARGET = Knob("box_seconds_per_review", 0.5, 5, "s", 0.1, "리뷰당 목표 (초)", "box_target_s")
# 1000 MiB: the least an incarnation can start in and serve from. The box at rest with the twin is the lab's own
# server (590-615 MiB, docs/box.md) and the stand-in for the seed's libraries (273-289 MiB, measured on two hosts):
# 898-903 MiB charged (2026-12-05; the stand-in is made once start-up's own peak is gone, so that is its peak too),
# plus the 100 MiB a live turn keeps above what the box uses (app/knobs/box.py). One bound with the stand-in off
# as well (LAB_BOX_STAND_IN=0 would start in ~700 MiB): the lesson's box holds it.
# 2 GiB: above a burst of 12 on ① (rest ~880 MiB + 25-55 MiB a request), so its survival can be shown too,
# and a twelfth of this 24 GiB host. Never below what the box uses now plus a margin (app/knobs/box.py).
# In steps of 1 MiB, what the instructor page types: the environment's 1.2 GiB (1228.8 MiB) is none, and stands
# as it is, since the knobs file keeps only the values an instructor turned.
BOX_MEMORY_CAP = Knob(
    "memory_cap_bytes", 1000 * MIB, 2048 * MIB, "bytes", MIB, "메모리 상한 (MiB)", "memory_cap_mib", 1 / MIB
)
BOX_KNOBS: tuple[Knob, ...] = (BOX_TARGET, BOX_MEMORY_CAP)


def every_knob(specs: tuple[PathSpec, ...] = PATHS) -> dict[str, Knob]:
    """Every knob declared, the paths' and the box's: what a knobs file may hold, each with its bounds."""
    return {knob.setting: knob for knob in (*(knob for path in specs for knob in path.knobs), *BOX_KNOBS)}


def knob_names(specs: tuple[PathSpec, ...] = PATHS) -> dict[str, str]:
    """Each knob's Korean name as the instructor's page and the class's banner write it: "② 대기석 (개)",
    "상자: 리뷰당 목표 (초)". The mark comes from the path, so a renumbered path renames its knobs."""
    names = {knob.setting: f"{path.mark} {knob.label}" for path in specs for knob in path.knobs}
    return names | {knob.setting: f"상자: {knob.label}" for knob in BOX_KNOBS}


def spec(name: str) -> PathSpec:
    """The registered path called `name` (KeyError for an unknown one)."""
    for registered in PATHS:
        if registered.name == name:
            return registered
    raise KeyError(name)


def routes(specs: tuple[PathSpec, ...] = PATHS) -> dict[str, str]:
    """Submitting route → path name: the requests LabMiddleware counts (polls of a ticket are not submissions)."""
    return {s.route: s.name for s in specs}
