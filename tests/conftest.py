"""App fixtures: a lab with a fake scorer, driven in-process with its lifespan running; the Redis rule."""

import functools
import importlib.util
import os
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.main import create_app
from app.settings import PROJECT_ROOT, Settings
from kit.local import redis_address
from tests.fakes import GatedScorer

REDIS_ADDRESS = redis_address()  # the one every Redis test uses (LAB_TEST_REDIS_URL, kit/local.py)

LabClientFactory = Callable[..., AbstractAsyncContextManager[httpx.AsyncClient]]


@pytest.fixture
def lab_client(tmp_path: Path) -> LabClientFactory:
    """`async with lab_client(scorer, limited_seats=2) as client:` runs a whole lab in-process.

    Tickets go to the default store kind (sqlite) in a file private to the test.
    """

    @asynccontextmanager
    async def open_client(scorer: GatedScorer, **overrides: Any) -> AsyncIterator[httpx.AsyncClient]:
        private = {"job_store": f"sqlite:///{tmp_path / 'jobs.db'}", "knobs_file": tmp_path / "knobs.json"}
        settings = Settings(**{"warmup": False, **private, **overrides})
        app = create_app(settings, scorer)
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lab", timeout=30) as client:
                yield client

    return open_client


@functools.cache
def students_burst() -> ModuleType:
    """static/burst.py imported as a module (it is a standalone script for students, not a package module)."""
    spec = importlib.util.spec_from_file_location("burst", PROJECT_ROOT / "static" / "burst.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["burst"] = module  # dataclasses resolve their module while the class is built
    spec.loader.exec_module(module)
    return module


@functools.cache
def redis_reachable() -> bool:
    """One TCP connect per session: is the test Redis up?"""
    try:
        with socket.create_connection(REDIS_ADDRESS, timeout=1):
            return True
    except OSError:
        return False


def needs_redis(item: pytest.Item) -> bool:
    """A test needs Redis when it says so (`@pytest.mark.redis`) or its id names it (a `redis` parameter or name)."""
    return item.get_closest_marker("redis") is not None or "redis" in item.nodeid.lower()


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Without Redis a developer's run skips the Redis tests; under CI (`CI` set) they fail instead.

    So a laptop without Redis stays green and honest about what it did not run, while CI can never
    pass by silently skipping the store that several boxes share.
    """
    if not needs_redis(item) or redis_reachable():
        return
    where = f"{REDIS_ADDRESS[0]}:{REDIS_ADDRESS[1]}"
    if os.environ.get("CI"):
        pytest.fail(f"Redis is not reachable at {where}, and CI must run the Redis tests", pytrace=False)
    pytest.skip(f"Redis is not reachable at {where} (start redis-server to run this test)")


ONE_BOX_DIRS = ("tests/box/", "tests/front/")  # real boxes (their own cgroup, a pinned core) and the front's fixed port


def xdist_group_of(item: pytest.Item) -> str:
    """The worker group a test runs in under `pytest -n`: a file's tests stay together (its module-scoped
    servers start once), and every slow test that starts a real box or the classroom front runs in one
    group, one at a time: two boxes would share the box's core, and the fronts share their port."""
    path = item.nodeid.split("::", 1)[0]
    if item.get_closest_marker("slow") is not None and path.startswith(ONE_BOX_DIRS):
        return "one-box"
    return path


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(item)))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores this process may use. A quarter of the suite's time is spent
    waiting on browsers, server starts and sockets, which a third worker fills on two cores (AMD EPYC, 2 vCPUs,
    2026-12-03: pytest 356 s with 2 workers, 276–348 s with 3)."""
    return len(os.sched_getaffinity(0)) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """Under `-n`, a test whose node id lost its group runs wherever xdist likes: its file's servers start on
    every worker, and two real boxes share the box's core. pytest 9.2 stopped honouring the id xdist 3.8
    writes (pytest-dev/pytest-xdist#1386), so stop and say so instead of running the suite that way."""
    lost = [nodeid for nodeid in ids if "@" not in nodeid]
    if node.config.getvalue("dist") == "loadgroup" and lost:
        pytest.exit(f"xdist's loadgroup lost the groups of {len(lost)} tests (first: {lost[0]}): pytest<9.2", 4)
