"""Swagger UI and the favicon, served by the box itself: a classroom without internet still gets /api/docs.

FastAPI's own docs page loads Swagger UI's JS and CSS from a CDN, so on an offline box it is a
blank page. The assets come from the `fastapi-offline` package (kept on PyPI, MIT) instead of a
hand-vendored copy; only its files are used, the app stays a plain FastAPI.
"""

from importlib.resources import files

from fastapi import APIRouter, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

from app.contract.student import keep_student
from app.settings import PROJECT_ROOT

DOCS_URL = "/api/docs"
ASSETS_URL = "/api/docs/assets"
FAVICON = PROJECT_ROOT / "static" / "favicon.ico"

router = APIRouter(include_in_schema=False)


def assets() -> StaticFiles:
    """Mounted at ASSETS_URL: swagger-ui-bundle.js and swagger-ui.css as the package ships them."""
    return StaticFiles(directory=str(files("fastapi_offline") / "static"))


@router.get(DOCS_URL)
async def swagger_ui(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    openapi_url = request.app.openapi_url or "/api/openapi.json"
    page = get_swagger_ui_html(
        openapi_url=f"{root}{openapi_url}",
        title=f"{request.app.title} — Swagger UI",
        swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{root}/favicon.ico",
        swagger_ui_parameters=request.app.swagger_ui_parameters,
    )
    keep_student(request, page)  # a student who starts from Swagger is one student at the front too
    return page


@router.get("/favicon.ico")
async def favicon() -> FileResponse:
    """Browsers ask for /favicon.ico on every page load; answer it rather than log a 404 each time."""
    return FileResponse(FAVICON, media_type="image/x-icon", headers={"Cache-Control": "public, max-age=86400"})
