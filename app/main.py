"""Assembles the lab: settings, lifespan, middleware, error handlers, routers. `app.main:app` is the ASGI app."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from app.api import docs, info, knobs, lesson, live, page, predict, tickets
from app.contract.error_handlers import SafeJSONResponse, install_error_handlers
from app.contract.openapi import LabAPI
from app.door.connections import ConnectionGuard
from app.door.forwarded import Forwarded
from app.door.middleware import LabMiddleware
from app.engine.model import Scorer
from app.inside.report import BoxCollector
from app.lab import Lab, open_lab
from app.lesson.record import LessonRecord
from app.observe.collector import lab_registry
from app.paths.registry import PATHS, PathSpec
from app.settings import Settings, get_settings


def create_app(
    settings: Settings | None = None, scorer: Scorer | None = None, specs: tuple[PathSpec, ...] = PATHS
) -> FastAPI:
    """Tests pass their own settings and a fake scorer (and may add a path); the server uses the environment."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with open_lab(settings, scorer, specs) as lab:
            app.state.lab = lab
            yield
            del app.state.lab
        await app.state.live_stats.close()

    app = LabAPI(
        settings,
        title="리뷰 분석 과부하 실습 (review lab)",
        description="One slow cross-encoder, four ways to cope with a crowd.",
        version="1.0.0",
        lifespan=lifespan,
        docs_url=None,  # app/api/docs.py serves Swagger UI from the box, not a CDN
        openapi_url="/api/openapi.json",
        redoc_url=None,
        default_response_class=SafeJSONResponse,
        # A redirect to the slash-less route would name the client's own Host header: a 404 instead.
        redirect_slashes=False,
    )
    app.state.settings = settings
    # Counts every connection when served by app.serve; the live routes take their seats from it.
    app.state.connections = ConnectionGuard(
        request_timeout_s=settings.request_timeout_s,
        max_connections=settings.max_connections,
        max_live=settings.max_live_connections,
    )

    def current_lab() -> Lab | None:
        return getattr(app.state, "lab", None)

    app.state.live_stats = live.stats_ticker(app)
    app.state.registry, app.state.collector = lab_registry(current_lab)

    def current_speed() -> dict[str, Any] | None:
        lab = current_lab()
        return None if lab is None else lab.speed_now()

    app.state.registry.register(BoxCollector(settings.box_state, current_speed))

    # The middleware counts every answer into the collector's tally: one registry per app.
    def routes() -> dict[str, str]:
        lab = current_lab()
        return lab.routes if lab is not None else {}

    def lesson_record() -> LessonRecord | None:
        lab = current_lab()
        return None if lab is None or lab.lesson is None else lab.lesson.record

    app.add_middleware(
        LabMiddleware,
        max_body_bytes=settings.max_body_bytes,
        requests=app.state.collector.requests,
        routes=routes,
        lesson=lesson_record,
    )
    app.add_middleware(Forwarded, trusted=settings.trusted_proxy)  # outermost: every part sees what the class typed
    install_error_handlers(app)
    app.include_router(predict.router)
    app.include_router(predict.plain_routes(specs, predict.declared_routes()))
    app.include_router(tickets.router)
    app.include_router(info.router)
    app.include_router(knobs.router)
    app.include_router(live.router)
    app.include_router(page.router)
    app.include_router(lesson.router)
    app.mount("/static", page.static_files(), name="static")
    app.include_router(docs.router)
    app.mount(docs.ASSETS_URL, docs.assets(), name="docs-assets")
    return app


app = create_app()
