"""The burst page students touch: the HTML, its static assets and the sample reviews it fires."""

import json
import mimetypes
from functools import lru_cache
from pathlib import Path
from typing import Literal, TypedDict

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel

from app.api.deps import get_lab
from app.registry import PATHS as PATH_SPECS
from app.schema import limits
from app.settings import PROJECT_ROOT

TEMPLATES_DIR = PROJECT_ROOT / "templates"
STATIC_DIR = PROJECT_ROOT / "static"

router = APIRouter(tags=["page"])
templates = Jinja2Templates(directory=TEMPLATES_DIR)


class SampleReview(BaseModel):
    id: int
    text: str


Answer = Literal["direct", "ticket"]
GivesUp = Literal["fast_answers", "requests", "own_pace", "one_answer"]


class PathFacts(TypedDict):
    """What the page's JS does differently per path.

    `route`: where a burst POSTs; `answer`: "direct" (200 with the result) or "ticket" (202 with a
    ticket the page follows); `gives_up`: which sentence the comparison card uses for what the path
    trades away; `batches`: its answers carry X-Batch-Size, so the summary shows the mean batch;
    `seats`: its /api/stats entry has `seats_taken` and `capacity`, shown on the panel's seats line.
    """

    route: str
    answer: Answer
    gives_up: GivesUp
    batches: bool
    seats: bool


class PagePath(PathFacts):
    """One path as the page knows it: its name, its circled number and its label, plus its facts."""

    name: str
    number: str
    label: str


# Keyed by the registry's path names until the path registry describes each path itself.
_FACTS: dict[str, PathFacts] = {
    "naive": PathFacts(
        route="/api/naive/predict", answer="direct", gives_up="fast_answers", batches=False, seats=False
    ),
    "limited": PathFacts(route="/api/limited/predict", answer="direct", gives_up="requests", batches=False, seats=True),
    "batched": PathFacts(route="/api/batched/predict", answer="direct", gives_up="own_pace", batches=True, seats=False),
    "tickets": PathFacts(route="/api/queue/jobs", answer="ticket", gives_up="one_answer", batches=False, seats=False),
}


def page_paths() -> list[PagePath]:
    """The lab's paths in display order: the page's `#lab-paths` block, the one list its JS reads.

    One entry: `{"name": "naive", "number": "①", "label": "① naive", "route": "/api/naive/predict",
    "answer": "direct", "gives_up": "fast_answers", "batches": false, "seats": false}`.
    """
    return [
        PagePath(name=name, number=number, label=f"{number} {name}", **_FACTS[name])
        for number, name in zip("①②③④", (p.name for p in PATH_SPECS), strict=True)
    ]


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
    context = {"base_url": base_url, "limits": limits(request.app.state.settings), "lab_paths": page_paths()}
    return templates.TemplateResponse(request=request, name="index.html", context=context)


@router.get("/api/samples", summary="The sample reviews the burst page and burst.py fire")
async def samples(request: Request) -> list[SampleReview]:
    return load_samples(get_lab(request).settings.samples_file)
