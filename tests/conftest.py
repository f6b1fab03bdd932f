"""App fixtures: a lab with a fake scorer, driven in-process with its lifespan running."""

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer

LabClientFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def lab_client(tmp_path: Path) -> LabClientFactory:
    """`async with lab_client(scorer, limited_seats=2) as client:` runs a whole lab in-process.

    Tickets go to the default store kind (sqlite) in a file private to the test.
    """

    @asynccontextmanager
    async def open_client(scorer: GatedScorer, **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
        settings = Settings(**{"warmup": False, "job_store": f"sqlite:///{tmp_path / 'jobs.db'}", **overrides})
        app = create_app(settings, scorer)
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lab", timeout=30) as client:
                yield client

    return open_client
