"""One client cannot take the box from the class: its 300 streams or 200 connections at once, and a classmate's /health.

A real nginx front (app/front/nginx.conf) before a real server (tiny model, slowed so ① requests
stay in flight). The attacker is 127.0.0.2 and the classmate 127.0.0.3: loopback both, but two
addresses, so the front keys them as two clients.
"""

import asyncio
import json

import httpx
import pytest

from app.errors import FRONT_LIMIT
from kit.live import live_server, slowed
from tests.front.test_front_page_live import InFlight
from tests.front_proxy import fronted
from tests.waiting import eventually

pytestmark = pytest.mark.slow

ATTACKER, CLASSMATE = "127.0.0.2", "127.0.0.3"
PER_CLIENT = 32  # app/front/nginx.conf: limit_conn client_requests


def client(source: str, *, http2: bool, connections: int) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    transport = httpx.AsyncHTTPTransport(verify=False, http2=http2, local_address=source, limits=limits)
    return httpx.AsyncClient(transport=transport, timeout=120)


async def attack_and_ask(front_url: str, box_url: str, n: int, *, http2: bool, connections: int) -> None:
    """`n` ① requests at once over `connections` connections from the attacker; the classmate asks meanwhile."""
    attackers = [client(ATTACKER, http2=http2, connections=1) for _ in range(connections)]
    with InFlight(box_url) as seen:
        calls = [
            attackers[i % connections].post(
                f"{front_url}/api/naive/predict", json={"text": f"한꺼번에 보내는 리뷰 {i}"}
            )
            for i in range(n)
        ]
        attack = asyncio.gather(*calls, return_exceptions=True)

        async def busy() -> bool:
            return seen.most >= 12

        await eventually(busy, limit_s=60)  # the attack is on the box now
        async with client(CLASSMATE, http2=True, connections=1) as classmate:
            health = await classmate.get(f"{front_url}/health")
            stats = await classmate.get(f"{front_url}/api/stats")
        answers = await attack
        for attacker in attackers:
            await attacker.aclose()
    assert health.status_code == 200 and stats.status_code == 200
    responses = [a for a in answers if isinstance(a, httpx.Response)]
    refused = [r for r in responses if r.status_code == 429]
    assert refused and all(json.loads(r.text)["error"] == FRONT_LIMIT.code for r in refused)
    assert {r.status_code for r in responses} <= {200, 429}
    assert seen.most <= PER_CLIENT  # never more of one client's requests on the box at once


def test_one_clients_300_streams_do_not_stop_a_classmates_health() -> None:
    with live_server(**slowed(0.3)) as server, fronted(server.url) as front:
        asyncio.run(attack_and_ask(front.url, server.url, 300, http2=True, connections=10))  # 30 streams each


def test_one_clients_200_connections_do_not_stop_a_classmates_health() -> None:
    with live_server(**slowed(0.3)) as server, fronted(server.url) as front:
        asyncio.run(attack_and_ask(front.url, server.url, 200, http2=False, connections=200))
