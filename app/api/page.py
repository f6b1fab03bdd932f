"""The burst page students touch: the HTML, its static assets and the sample reviews it fires."""

import json
import mimetypes
from collections.abc import Sequence
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic reads it as a response model on Python 3.11 too

from app.api.deps import get_lab
from app.api.measured import naive_bursts, naive_cliff
from app.api.records_ko import host_ko, record_ko
from app.contract import student
from app.contract.schema import limits, quoted
from app.inside.report import stand_in
from app.paths.registry import BOX_KNOBS, PathSpec, knob_names
from app.settings import PROJECT_ROOT, Settings

TEMPLATES_DIR = PROJECT_ROOT / "templates"
STATIC_DIR = PROJECT_ROOT / "static"

router = APIRouter(tags=["page"])
# The instructor's address carries the token: never in a Referer (its fetches included), a cache or a frame.
PRIVATE_PAGE = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
}
templates = Jinja2Templates(directory=TEMPLATES_DIR)
# The page quotes a measurement's record in Korean (when, and on what); the English record stays in /api/model.
templates.env.filters.update(record_ko=record_ko, host_ko=host_ko)


class SampleReview(BaseModel):
    id: int
    text: str


class PagePath(TypedDict):
    """One path as the page's JS knows it (static/js/paths.js reads the `#lab-paths` block).

    `route`: where a burst POSTs; `answer`: "direct" (200 with the result) or "ticket" (202 with a
    ticket the page follows); `gives_up`: the comparison card's sentence for what the path trades away
    (app/paths/registry.py's `GivesUp`: `said`, `none_refused`, `counts_refusals`); `batches`: its answers
    carry X-Batch-Size, so the summary shows the mean batch;
    `seats`: its /api/stats entry has `seats_taken` and `capacity`, shown on the panel's seats line;
    `blurb`: the words beside its radio; `handout`: one of the printed handout's four (`burst.py … all` fires those).
    """

    name: str
    number: str
    label: str
    blurb: str
    route: str
    answer: str
    gives_up: dict[str, str | bool]
    batches: bool
    seats: bool
    handout: bool


def page_paths(specs: Sequence[PathSpec], settings: Settings) -> list[PagePath]:
    """The lab's paths in display order, from the running lab's registry: the page's one list.

    One entry: `{"name": "naive", "number": "①", "label": "① naive", "blurb": "바로 추론",
    "route": "/api/naive/predict", "answer": "direct", "gives_up": {"said": …}, "batches": false, "seats": false}`.
    """
    return [
        PagePath(
            name=p.name,
            number=p.mark,
            label=p.label,
            blurb=quoted(p.blurb, settings),
            route=p.route,
            answer=p.answer,
            gives_up=asdict(p.gives_up),
            batches=p.batches,
            seats=p.seats,
            handout=p.handout,
        )
        for p in specs
    ]


class PageKnob(TypedDict):
    """One knob as static/js/knobs.js knows it (the `#lab-knobs` block): its name in the banner that announces a
    turn, its unit (bytes are written as MiB), and the data-limit spans it fills with value × `scale`."""

    name: str
    unit: str
    limit: str
    scale: float


def page_knobs(specs: Sequence[PathSpec]) -> dict[str, PageKnob]:
    """The running lab's knobs and the box's, by setting: the page's one table of them."""
    names = knob_names(tuple(specs))
    knobs = [*(knob for p in specs for knob in p.knobs), *BOX_KNOBS]
    return {k.setting: PageKnob(name=names[k.setting], unit=k.unit, limit=k.limit, scale=k.scale) for k in knobs}


def static_files() -> StaticFiles:
    """Mounted once at /static: the page's JS modules and CSS, and burst.py for students to download."""
    # Browsers refuse a module script served as anything but JavaScript; some hosts' mime tables say text/plain.
    mimetypes.add_type("text/javascript", ".js")
    return StaticFiles(directory=STATIC_DIR)


@lru_cache
def load_samples(path: Path) -> list[SampleReview]:
    return [SampleReview(**item) for item in json.loads(path.read_text(encoding="utf-8"))]


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def burst_page(request: Request) -> HTMLResponse:
    """The page draws everything else from the API, so it only needs the box's own address."""
    base_url = str(request.base_url).rstrip("/")
    settings = request.app.state.settings
    specs = get_lab(request).specs
    context = {
        "base_url": base_url,
        "limits": limits(settings),
        "lab_paths": page_paths(specs, settings),
        "lab_knobs": page_knobs(specs),
        "naive_measured": naive_bursts(),
        "naive_cliff": naive_cliff(),
        "stand_in": stand_in(settings.box_state),
    }
    response = templates.TemplateResponse(request=request, name="index.html", context=context)
    student.keep_student(request, response)
    return response


@router.get("/instructor", response_class=HTMLResponse, include_in_schema=False)
async def instructor_page(request: Request, token: str | None = None) -> HTMLResponse:
    """The instructor's knobs; only with the token the box printed at start-up (else 403, nothing shown)."""
    get_lab(request).knobs.allowed(token)
    return templates.TemplateResponse(request=request, name="instructor.html", context={}, headers=PRIVATE_PAGE)


@router.get("/api/paths", summary="The box's paths, in order: what the page and burst.py fire at, and how each answers")
async def paths(request: Request) -> list[PagePath]:
    """burst.py learns a path beyond the handout here, so a new path needs no edit to the students' script."""
    lab = get_lab(request)
    return page_paths(lab.specs, lab.settings)


@router.get("/api/samples", summary="The sample reviews the burst page and burst.py fire")
async def samples(request: Request) -> list[SampleReview]:
    return load_samples(get_lab(request).settings.samples_file)
