"""A class behind one school address (NAT): the front refuses students, not the address, and says so.

A real nginx front (app/front/nginx.conf) before a real server (the tiny model, slowed so ② holds its
seats). Every client here is 127.0.0.9: one address, as a school's NAT makes a whole class. Each
student carries their own key (the `lab_student` cookie the page gets, the one burst.py sends).
"""

import asyncio
import json
from collections import Counter

import httpx
import pytest

from app.contract import student
from app.errors import BOX_FULL, FRONT_LIMIT
from kit.live import live_server, slowed
from tests.front_proxy import fronted

pytestmark = pytest.mark.slow

SCHOOL = "127.0.0.9"
LIMITED = "/api/limited/predict"


def a_student(*, key: str | None, http2: bool, connections: int = 1) -> httpx.AsyncClient:
    """One student's client from the school's address: a page (HTTP/2, one connection) or a script (HTTP/1.1)."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    transport = httpx.AsyncHTTPTransport(verify=False, http2=http2, local_address=SCHOOL, limits=limits)
    cookies = {student.COOKIE: key} if key else None
    return httpx.AsyncClient(transport=transport, timeout=120, cookies=cookies)


def who(response: httpx.Response | BaseException) -> str:
    """'200', 'box_full', 'front_limit', another status, or the error's name."""
    if isinstance(response, BaseException):
        return type(response).__name__
    if response.status_code == 429:
        return str(json.loads(response.text)["error"])
    return str(response.status_code)


async def burst(client: httpx.AsyncClient, url: str, n: int, tag: str) -> list[str]:
    calls = [client.post(f"{url}{LIMITED}", json={"text": f"학교에서 보낸 리뷰 {tag} {i}"}) for i in range(n)]
    return [who(r) for r in await asyncio.gather(*calls, return_exceptions=True)]


async def class_fires(url: str, students: int, each: int) -> list[Counter[str]]:
    """`students` pages (own keys, HTTP/2) fire ② `each` at once, twice, one second apart: each round's answers."""
    pages = [a_student(key=student.new_key(), http2=True) for _ in range(students)]
    rounds = []
    try:
        for r in range(2):
            answers = await asyncio.gather(*(burst(page, url, each, f"{r}-{i}") for i, page in enumerate(pages)))
            rounds.append(Counter(a for page in answers for a in page))
            await asyncio.sleep(1)  # the class fires again a second later, as the walk did (not a wait)
    finally:
        for page in pages:
            await page.aclose()
    return rounds


def test_twelve_pages_behind_one_address_meet_the_box_not_the_front() -> None:
    with live_server(**slowed(0.3, warm=False)) as server, fronted(server.url) as front:
        rounds = asyncio.run(class_fires(front.url, 12, 12))
    for answers in rounds:
        # Every answer is the box's own: served, `box_full`, or (on a host slow enough) ②'s 503 after 15 s.
        assert answers["200"] >= 1 and answers[FRONT_LIMIT.code] == 0, answers
        assert set(answers) <= {"200", BOX_FULL.code, "503"}, answers


async def flood_beside_classmates(url: str) -> tuple[Counter[str], Counter[str]]:
    """One key sends 200 ② at once over 200 connections while 11 classmates' pages (connected before) send 12 each.

    200 is past one student's 32 at once many times over; `tools/class_check --one-address` measures 500."""
    flooder = a_student(key=student.new_key(), http2=False, connections=200)
    classmates = [a_student(key=student.new_key(), http2=True) for _ in range(11)]
    try:
        for page in classmates:  # their pages are open: the flood's handshakes do not delay theirs
            await page.get(f"{url}/health")
        flood = asyncio.ensure_future(burst(flooder, url, 200, "flood"))
        await asyncio.sleep(0.5)  # the flood is at the front first (a guard against racing it, not a wait for it)
        theirs = await asyncio.gather(*(burst(c, url, 12, f"c{i}") for i, c in enumerate(classmates)))
        return Counter(await flood), Counter(a for page in theirs for a in page)
    finally:
        for client in (flooder, *classmates):
            await client.aclose()


def test_one_student_flooding_is_refused_by_the_front_while_classmates_on_the_address_get_the_box() -> None:
    with live_server(**slowed(0.3, warm=False)) as server, fronted(server.url) as front:
        flood, classmates = asyncio.run(flood_beside_classmates(front.url))
    assert flood[FRONT_LIMIT.code] >= 100, flood  # at most a student's 32 at once pass
    assert classmates[FRONT_LIMIT.code] == 0, classmates
    assert set(classmates) <= {"200", BOX_FULL.code, "503"}, classmates


async def hundred_at_once(url: str, *, keyed: bool) -> Counter[str]:
    """100 ② at once from the school's address, over 100 connections: 100 students with keys, or one script without."""
    keys = [student.new_key() if keyed else None for _ in range(100)]
    clients = [a_student(key=key, http2=False) for key in keys]
    try:
        calls = [burst(client, url, 1, str(i)) for i, client in enumerate(clients)]
        return Counter(a for answers in await asyncio.gather(*calls) for a in answers)
    finally:
        for client in clients:
            await client.aclose()


def test_requests_without_a_key_are_their_address_as_before() -> None:
    with live_server(**slowed(0.3, warm=False)) as server, fronted(server.url) as front:
        keyless = asyncio.run(hundred_at_once(front.url, keyed=False))
        keyed = asyncio.run(hundred_at_once(front.url, keyed=True))
    assert keyless[FRONT_LIMIT.code] > 0, keyless  # one client: past a student's 32 at once, the front refuses
    assert keyed[FRONT_LIMIT.code] == 0 and keyed["200"] >= 1, keyed  # a hundred students: the box answers
