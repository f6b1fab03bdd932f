"""The path registry: every path describes itself once, and a new path shows up wherever the registered ones do.

The new one (numbered after them: ⑥ while there are five) is built as a new path would be: its module's
`build(parts)` (here, this module's), one `PathSpec` naming that module, and its knob's setting; the lab, the
routes and the page are the real ones (the test's only hand is to pass the registry with it to `create_app`, as
PATHS would hold it)."""

import dataclasses
import json
import re
from collections.abc import AsyncIterator

import httpx
import pytest
from asgi_lifespan import LifespanManager
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from app.api.page import STATIC_DIR, TEMPLATES_DIR
from app.contract.schema import limits
from app.lab import Lab
from app.main import create_app
from app.paths.adaptive import AdaptiveGate
from app.paths.batched import MicroBatcher
from app.paths.parts import Parts
from app.paths.pipeline import Outcome
from app.paths.registry import (
    BOX_KNOBS,
    BOX_MEMORY_CAP,
    MIB,
    PATHS,
    REFUSED_REQUESTS,
    Knob,
    Load,
    PathSpec,
    every_knob,
    knob_names,
    routes,
    spec,
)
from app.settings import Settings
from kit.traffic import DEFAULT_BURST, burst_size
from tests.conftest import students_burst
from tests.fakes import GatedScorer, fake_ranking

# One more than the registered paths (numbered after them): the registry reaches every edge without edits there.
EXTRA = PathSpec(
    "lifo",
    len(PATHS) + 1,
    "나중에 온 것 먼저",
    "/api/lifo/predict",
    (200, 429),
    ("stack_full",),
    (Knob("lifo_depth", 1, 64, "reviews", 1, "쌓는 깊이 (개)", "lifo_depth", retune="depth"),),
    module=__name__,  # its `build` below
)


class LifoSettings(Settings):
    """The new path's knob as a new path adds it: a `Settings` field with its default."""

    lifo_depth: int = 8


class LastInFirstOut:
    """A stand-in new path: answers at once, reports a fixed load so the test can find its numbers."""

    spec = EXTRA
    name = EXTRA.name
    withdrawable = False

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.depths: list[int] = []

    async def run(self, text: str) -> Outcome:
        self.ran.append(text)
        return Outcome(fake_ranking(text), 0.0, 0.001)

    def load(self) -> Load:
        return Load(in_flight=1, waiting=2, refusals={"stack_full": 3}, details={"depth": 2})

    def retune(self, *, depth: int) -> None:
        self.depths.append(depth)


def build(parts: Parts) -> LastInFirstOut:
    """The new path from the lab's parts, as app/lab.py calls each registered path's module."""
    assert isinstance(parts.settings, LifoSettings)
    path = LastInFirstOut()
    path.depths.append(parts.settings.lifo_depth)
    return path


def app_with_extra() -> FastAPI:
    """The real app over the registry plus the new path (no route declared for it, no lab field swapped)."""
    return create_app(LifoSettings(warmup=False, job_store="memory://"), GatedScorer(gated=False), (*PATHS, EXTRA))


def test_paths_are_numbered_in_display_order_with_distinct_names_and_routes() -> None:
    assert [p.number for p in PATHS] == list(range(1, len(PATHS) + 1))
    assert [p.label for p in PATHS] == ["① naive", "② limited", "③ batched", "④ tickets", "⑤ adaptive"]
    assert len(routes()) == len({p.name for p in PATHS}) == len(PATHS)


def test_the_readmes_path_table_has_a_row_for_every_registered_path() -> None:
    """README names the paths a newcomer meets on the page: the handout's four and what is beyond them."""
    readme = (STATIC_DIR.parent / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\S+ \w+) \| `POST (\S+)` \|", readme, flags=re.MULTILINE)
    assert rows == [(p.label, p.route) for p in PATHS]
    beyond = [line for line in readme.splitlines() if line.startswith(tuple(f"| {p.label} |" for p in PATHS))]
    assert ["beyond the handout" in line for line in beyond] == [not p.handout for p in PATHS]
    assert "## The five paths" in readme and len(PATHS) == 5


def test_students_burst_py_knows_the_handouts_four_as_the_registry_does() -> None:
    """static/burst.py stays standard-library only for students: it keeps the printed handout's four (held to the
    registry here) and learns any other path from the box."""
    burst = students_burst()
    handout = {p.name: (p.number, p.label, p.route, p.answer == "ticket") for p in PATHS if p.handout}
    assert {name: (b.number, b.label, b.route, b.ticket) for name, b in burst.PATHS.items()} == handout
    assert [p.name for p in PATHS if not p.handout] == ["adaptive"]  # the page marks it beyond the handout


def test_every_knob_is_a_setting_whose_default_is_within_its_bounds_and_steps() -> None:
    defaults = Settings()
    for knobs in (*(path.knobs for path in PATHS), BOX_KNOBS):
        for knob in knobs:
            assert knob.setting in Settings.model_fields, knob
            assert knob.low < knob.high and knob.step > 0 and knob.on_step(knob.high), knob
            default = float(getattr(defaults, knob.setting))
            # The box's 1.2 GiB is 1228.8 MiB, between the page's steps: the environment's, never written as a knob.
            assert knob.allows(default) or (knob is BOX_MEMORY_CAP and knob.low <= default <= knob.high), knob
    assert [BOX_MEMORY_CAP.on_step(v * MIB) for v in (600, 1228.8, 1229, 2048)] == [True, False, True, True]


def test_a_step_counts_whole_steps_from_low_without_float_noise() -> None:
    target = spec("adaptive").knobs[0]
    assert target.setting == "adaptive_target_reviews" and not target.whole
    assert [target.allows(v) for v in (0.5, 0.6, 1.5, 0.1 + 0.2 + 1.2, 9.9, 10)] == [True] * 6
    assert [target.allows(v) for v in (0.4, 1.55, 10.1, 1.5 + 1e-6)] == [False] * 4
    seats = spec("limited").knobs[0]
    assert seats.whole and seats.allows(8) and not seats.allows(1.5) and not seats.allows(8.000001)


def test_each_route_a_path_names_is_a_documented_post_of_the_app() -> None:
    documented = create_app(Settings(warmup=False)).openapi()["paths"]
    for path in PATHS:
        assert "post" in documented[path.route], path


async def test_the_running_lab_has_the_registered_paths_in_order() -> None:
    app = create_app(Settings(warmup=False, job_store="memory://"), GatedScorer(gated=False))
    async with LifespanManager(app):
        lab: Lab = app.state.lab
        assert lab.specs == PATHS and list(lab.paths) == [p.name for p in PATHS]
        assert lab.routes == routes()


@pytest.fixture
async def extra() -> AsyncIterator[tuple[httpx.AsyncClient, LastInFirstOut]]:
    """A lab built with the new path registered: the lab built it, and its route is the app's own."""
    app = app_with_extra()
    async with LifespanManager(app) as manager:
        lab: Lab = app.state.lab
        path = lab.path(EXTRA.name, LastInFirstOut)
        assert path.depths == [8]  # built from the lab's parts: its setting's default
        path.depths.clear()
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lab") as client:
            yield client, path


async def test_a_new_path_is_in_metrics_with_its_statuses_and_reasons_born_at_zero(
    extra: tuple[httpx.AsyncClient, LastInFirstOut],
) -> None:
    client, _ = extra
    text = (await client.get("/metrics")).text
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("review_requests_total", (("path", "lifo"), ("status", "200")))] == 0
    assert samples[("review_requests_total", (("path", "lifo"), ("status", "429")))] == 0
    assert samples[("review_in_flight", (("path", "lifo"),))] == 1
    assert samples[("review_waiting", (("path", "lifo"),))] == 2
    assert samples[("review_rejections_total", (("path", "lifo"), ("reason", "stack_full")))] == 3
    assert samples[("review_wait_seconds_count", (("path", "lifo"),))] == 0
    assert samples[("review_cache_hits_total", (("path", "lifo"),))] == 0


async def test_a_new_path_answers_and_is_counted_timed_and_in_stats(
    extra: tuple[httpx.AsyncClient, LastInFirstOut],
) -> None:
    client, path = extra
    answer = await client.post(EXTRA.route, json={"text": "다섯 번째 길"})
    assert answer.status_code == 200 and answer.json()["path"] == "lifo"
    assert path.ran == ["다섯 번째 길"]
    metrics = (await client.get("/metrics")).text
    assert 'review_requests_total{path="lifo",status="200"} 1.0' in metrics
    assert 'review_inference_seconds_count{path="lifo"} 1.0' in metrics
    stats = (await client.get("/api/stats")).json()
    assert list(stats["paths"]) == [*(p.name for p in PATHS), "lifo"]
    assert stats["paths"]["lifo"] == {"in_flight": 1, "waiting": 2, "depth": 2}
    assert stats["rejections"]["lifo"] == {"stack_full": 3}
    documented = (await client.get("/api/openapi.json")).json()["paths"]
    assert documented[EXTRA.route]["post"]["summary"] == f"{EXTRA.label}: 나중에 온 것 먼저"  # its route, from its spec
    assert set(documented[EXTRA.route]["post"]["responses"]) >= {"200", "422", "429"}


async def test_a_new_path_is_on_the_page_with_its_radio_and_in_the_block_the_scripts_read(
    extra: tuple[httpx.AsyncClient, LastInFirstOut],
) -> None:
    client, _ = extra
    html = (await client.get("/")).text
    assert f'<input type="radio" name="path" value="lifo"> {EXTRA.label} <small>나중에 온 것 먼저</small>' in html
    listed = page_block(html, "lab-paths")
    assert isinstance(listed, list)
    assert [p["name"] for p in listed] == [*(p.name for p in PATHS), "lifo"]
    assert listed[-1] == {
        "name": "lifo",
        "number": EXTRA.mark,
        "label": EXTRA.label,
        "blurb": "나중에 온 것 먼저",
        "route": "/api/lifo/predict",
        "answer": "direct",
        "gives_up": dataclasses.asdict(REFUSED_REQUESTS),  # a path that refuses gives up requests, unless it says
        "batches": False,
        "seats": False,
        "handout": False,
    }
    knobs = page_block(html, "lab-knobs")
    assert isinstance(knobs, dict)
    assert knobs["lifo_depth"] == {
        "name": f"{EXTRA.mark} 쌓는 깊이 (개)",
        "unit": "reviews",
        "limit": "lifo_depth",
        "scale": 1,
    }


async def test_burst_py_learns_a_new_path_from_the_box_and_fires_it_by_name_or_number(
    extra: tuple[httpx.AsyncClient, LastInFirstOut], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = extra
    listed = (await client.get("/api/paths")).json()
    assert [p["name"] for p in listed] == [*(p.name for p in PATHS), "lifo"]
    burst = students_burst()
    monkeypatch.setattr(burst, "PATHS", dict(burst.PATHS))  # the module is shared: learn into a copy
    burst.PATHS.update(burst.paths_from(listed))
    assert burst.PATHS["lifo"] == burst.BoxPath(EXTRA.number, EXTRA.label, EXTRA.route, ticket=False, handout=False)
    assert burst.PATHS["adaptive"].number == 5 and not burst.PATHS["adaptive"].handout
    assert burst.PATHS["tickets"].ticket
    assert burst.path_named(str(EXTRA.number)) == burst.path_named(EXTRA.mark) == burst.path_named("LIFO") == "lifo"
    assert burst.path_named("fastest") is None
    assert burst.path_choices().endswith(f"lifo, 1-{EXTRA.number} or all")


def test_burst_py_reads_what_it_can_of_a_paths_answer() -> None:
    """An entry it cannot read is left out, never raised: a box's odd answer must not stop a burst of the four."""
    burst = students_burst()
    good = {"name": "x", "number": "⑦", "label": "⑦ x", "route": "/api/x", "answer": "direct", "handout": False}
    assert list(burst.paths_from([good, {"name": "y"}, "z", {**good, "name": "w", "number": "?"}])) == ["x"]
    assert burst.paths_from({"detail": "Not Found"}) == {}


def page_block(html: str, name: str) -> object:
    """The JSON of the page's `<script type="application/json" id=name>` block, which its scripts read."""
    block = re.search(rf'<script type="application/json" id="{name}">(.*?)</script>', html, flags=re.DOTALL)
    assert block is not None, name
    return json.loads(block.group(1))


def test_a_knobs_name_is_its_paths_mark_and_its_registered_label() -> None:
    names = knob_names()
    assert names["limited_seats"] == "② 대기석 (개)"
    assert names["memory_cap_bytes"] == "상자: 메모리 상한 (MiB)"
    assert knob_names((*PATHS, EXTRA))["lifo_depth"] == f"{EXTRA.mark} 쌓는 깊이 (개)"


async def test_every_turnable_knob_has_its_korean_name_on_the_instructors_page_and_the_class_page() -> None:
    """Both pages take the names from the server (the registry): /api/knobs for the instructor's table, the
    page's #lab-knobs block for the class's banner; neither script keeps a table of knobs of its own."""
    scripts = {name: (STATIC_DIR / "js" / name).read_text("utf-8") for name in ("instructor.js", "knobs.js")}
    app = create_app(Settings(warmup=False, job_store="memory://"), GatedScorer(gated=False))
    async with LifespanManager(app) as manager:
        turnable = app.state.lab.knobs.snapshot().values
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=manager.app), base_url="http://lab") as client:
            listed = {k["setting"]: k["name"] for k in (await client.get("/api/knobs")).json()["knobs"]}
            on_page = page_block((await client.get("/")).text, "lab-knobs")
    assert {"adaptive_target_reviews", "adaptive_interval_reviews"} <= set(turnable)
    names = knob_names()
    assert listed == {setting: names[setting] for setting in turnable}
    assert isinstance(on_page, dict)
    for setting in turnable:
        assert on_page[setting]["name"] == names[setting] and re.search("[가-힣]", names[setting]), setting
        for name, script in scripts.items():
            assert not re.search(rf"^\s*{setting}: ", script, flags=re.MULTILINE), (setting, name)


def test_every_number_a_gives_up_sentence_names_is_one_the_comparison_fills() -> None:
    """compare.js fills `{name}`s from its `facts` and holds no sentence of its own: a name it does not define
    would show as "–" on every card."""
    script = (STATIC_DIR / "js" / "compare.js").read_text("utf-8")
    facts = script[script.index("function facts(") : script.index("function fill(")]
    defined = set(re.findall(r"^\s*(\w+)[:,]", facts, flags=re.MULTILINE))
    for path in PATHS:
        for sentence in (path.gives_up.said, path.gives_up.none_refused):
            assert set(re.findall(r"\{(\w+)\}", sentence)) <= defined, (path.name, sentence)
            assert sentence.count("[") == sentence.count("]"), (path.name, sentence)
    assert "포기한 것" not in script


def test_every_limit_the_page_quotes_is_one_limits_fills_and_a_turned_knob_follows() -> None:
    """limits() takes the knobs' numbers from the registry: each data-limit span of the page has its value, and
    the knob behind it writes its live value there (static/js/knobs.js), ③'s window in ms."""
    page = (TEMPLATES_DIR / "index.html").read_text("utf-8")
    spans = set(re.findall(r'data-limit="(\w+)"', page))
    quoted = limits(Settings(batch_window_s=0.04, limited_seats=2))
    assert spans and spans <= set(quoted)
    assert (quoted["window_ms"], quoted["seats"]) == ("40", "2")
    followed = {knob.limit for knob in every_knob().values()}
    assert spans - followed == {"hold_grace_s"}  # ②'s grace is a setting, not a knob anyone turns


def test_the_metrics_tour_fires_a_burst_at_a_path_it_does_not_size() -> None:
    """kit/traffic.py (the Grafana and metrics tours) sizes the registered paths; a new one gets the default burst."""
    assert burst_size(EXTRA.name) == DEFAULT_BURST
    assert all(burst_size(p.name) >= 3 for p in PATHS)


async def test_each_paths_knobs_are_handed_to_its_own_owner_a_new_paths_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """The board's table is built from the registry: every knob naming a `retune` keyword is turned on its path's
    owner (whole numbers where the knob says so), with no per-knob entry written anywhere else."""
    app = app_with_extra()
    async with LifespanManager(app):
        lab: Lab = app.state.lab
        turnable = {knob.setting for path in (*PATHS, EXTRA) for knob in path.knobs if knob.retune}
        assert set(lab.knobs.specs) - {knob.setting for knob in BOX_KNOBS} == turnable
        assert "naive_memory_guard" not in lab.knobs.specs  # measured at start-up: not turnable live
        retuned: list[dict[str, float]] = []
        monkeypatch.setattr(lab.path("batched", MicroBatcher), "retune", lambda **change: retuned.append(change))
        lab.knobs.turn("batch_max", 5.0)
        lab.knobs.turn("batch_window_s", 0.05)
        assert retuned == [{"max_size": 5}, {"window_s": 0.05}] and isinstance(retuned[0]["max_size"], int)
        adaptive = lab.path("adaptive", AdaptiveGate)
        before = adaptive.target_s
        lab.knobs.turn("adaptive_target_reviews", 2 * lab.settings.adaptive_target_reviews)  # taken as it is
        assert adaptive.target_s == pytest.approx(2 * before)
        extra = lab.path(EXTRA.name, LastInFirstOut)
        extra.depths.clear()
        lab.knobs.turn("lifo_depth", 7.0)  # the lab's own board, as the instructor's page turns it
        assert extra.depths == [7] and isinstance(extra.depths[0], int)
