"""The burst page students touch: the HTML, its static assets and the sample reviews it fires."""

import json
from functools import lru_cache
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel

from app.api.deps import get_lab
from app.schema import limits
from app.settings import PROJECT_ROOT

TEMPLATES_DIR = PROJECT_ROOT / "templates"
STATIC_DIR = PROJECT_ROOT / "static"

router = APIRouter(tags=["page"])
templates = Jinja2Templates(directory=TEMPLATES_DIR)


class SampleReview(BaseModel):
    id: int
    text: str


def static_files() -> StaticFiles:
    """Mounted once at /static: the page's JS and CSS, and burst.py for students to download."""
    return StaticFiles(directory=STATIC_DIR)


@lru_cache
def load_samples(path: Path) -> list[SampleReview]:
    return [SampleReview(**item) for item in json.loads(path.read_text(encoding="utf-8"))]


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
async def burst_page(request: Request) -> HTMLResponse:
    """The page draws everything else from the API, so it only needs the box's own address."""
    base_url = str(request.base_url).rstrip("/")
    context = {"base_url": base_url, "limits": limits(request.app.state.settings)}
    return templates.TemplateResponse(request=request, name="index.html", context=context)


@router.get("/api/samples", summary="The sample reviews the burst page and burst.py fire")
async def samples(request: Request) -> list[SampleReview]:
    return load_samples(get_lab(request).settings.samples_file)
