"""Who a request is behind one school address: the page's student key, and what the front says the class typed."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.cookies import SimpleCookie
from pathlib import Path

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.contract import student
from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer

FRONT = "127.0.0.1"  # Settings.trusted_proxy: the front reaches the box over loopback
TYPED = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "review.camp.example:8443", "X-Forwarded-For": "203.0.113.7"}


@asynccontextmanager
async def box(tmp_path: Path, peer: str) -> AsyncIterator[httpx.AsyncClient]:
    """The lab in-process, every request arriving from `peer` (as the front's, or a student's own, connection)."""
    settings = Settings(warmup=False, job_store=f"sqlite:///{tmp_path / 'jobs.db'}", knobs_file=tmp_path / "k.json")
    app = create_app(settings, GatedScorer(gated=False))
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app, client=(peer, 40000))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", timeout=30) as client:
            yield client


def given(response: httpx.Response) -> SimpleCookie:
    cookie: SimpleCookie = SimpleCookie()
    for header in response.headers.get_list("set-cookie"):
        cookie.load(header)
    return cookie


@pytest.mark.parametrize("where", ["/", "/api/docs"])
async def test_a_new_student_gets_a_key_kept_for_the_lesson(tmp_path: Path, where: str) -> None:
    async with box(tmp_path, "192.0.2.10") as client:
        first = await client.get(where)
    cookie = given(first)[student.COOKIE]
    assert student.valid(cookie.value)
    assert int(cookie["max-age"]) == student.LIFETIME_S and cookie["path"] == "/"
    assert cookie["httponly"] and cookie["samesite"].lower() == "lax"
    assert not cookie["secure"]  # plain HTTP straight to the box: a Secure cookie would never come back


async def test_a_student_keeps_their_key_and_a_malformed_one_is_replaced(tmp_path: Path) -> None:
    async with box(tmp_path, "192.0.2.10") as client:
        keyed = await client.get("/", headers={"Cookie": f"{student.COOKIE}=abcdefghijklmnop_-1234"})
        forged = await client.get("/", headers={"Cookie": f"{student.COOKIE}=short"})
        hostile = await client.get("/", headers={"Cookie": f'{student.COOKIE}="a;b\\u001b[31m"'})
    assert student.COOKIE not in given(keyed)
    for response in (forged, hostile):
        assert response.status_code == 200 and student.valid(given(response)[student.COOKIE].value)
    keys = {given(r)[student.COOKIE].value for r in (forged, hostile)}
    assert len(keys) == 2  # random, one per new student


async def test_through_the_front_the_page_shows_the_address_the_class_typed(tmp_path: Path) -> None:
    async with box(tmp_path, FRONT) as client:
        page = await client.get("/", headers=TYPED)
    base = "https://review.camp.example:8443"
    assert f"curl -kO {base}/static/burst.py && python3 burst.py {base} 50 -k" in page.text
    assert "http://review.camp.example" not in page.text and "127.0.0.1:8000" not in page.text
    assert given(page)[student.COOKIE]["secure"]  # the class is on HTTPS: the key travels only there


async def test_nobody_but_the_front_can_change_the_address_the_page_shows(tmp_path: Path) -> None:
    async with box(tmp_path, "192.0.2.66") as client:
        page = await client.get("/", headers=TYPED)
    assert "review.camp.example" not in page.text and "http://127.0.0.1:8000/static/burst.py" in page.text


@pytest.mark.parametrize(
    "host",
    [b"evil.example/path", b"a b", b"x" * 300, b"[::1", b"host:port", "ex\u00e4mple.com".encode(), b"'\"><script>"],
)
async def test_a_malformed_forwarded_host_is_ignored_even_from_the_front(tmp_path: Path, host: bytes) -> None:
    async with box(tmp_path, FRONT) as client:
        page = await client.get("/", headers={b"X-Forwarded-Proto": b"https", b"X-Forwarded-Host": host})
    assert page.status_code == 200
    assert "curl -kO https://127.0.0.1:8000/static/burst.py" in page.text  # the scheme is still the front's word
