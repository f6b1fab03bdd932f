"""Through the classroom front (nginx, HTTPS): burst.py, Swagger, event streams, the live socket, and 502 on a death."""

import asyncio
import json
import re
import ssl
from pathlib import Path

import httpx
import pytest
from websockets.sync.client import connect

from kit.live import live_server, slowed
from kit.serverproc import wait_healthy
from tests.box.test_box_live import CAP, LONG_REVIEW, boxed
from tests.front_proxy import fronted
from tests.test_burst_cli import run_burst

pytestmark = pytest.mark.slow


def test_burst_py_and_swagger_work_through_the_front(tmp_path: Path) -> None:
    with live_server() as server, fronted(server.url) as front:
        refused = run_burst(front.url, "6", "limited")
        assert refused.returncode == 1 and "-k" in refused.stderr  # the local CA's certificate: say how to go on
        out = tmp_path / "rows.json"
        result = run_burst(front.url, "6", "limited", "-k", "--json", str(out))
        assert result.returncode == 0, result.stderr
        rows = json.loads(out.read_text())["bursts"][0]["rows"]
        assert len(rows) == 6 and {row["status"] for row in rows} <= {200, 429} and 200 in {r["status"] for r in rows}
        docs = httpx.get(f"{front.url}/api/docs", verify=False)
        assert docs.status_code == 200 and "swagger" in docs.text.lower()
        assert httpx.get(f"{front.url}/api/openapi.json", verify=False).json()["paths"]


def test_event_streams_and_the_live_socket_flow_through_the_front() -> None:
    with live_server(**slowed(0.3)) as server, fronted(server.url) as front:
        with httpx.Client(base_url=front.url, verify=False, timeout=60) as client:
            jobs = [client.post("/api/queue/jobs", json={"text": f"줄 서는 리뷰 {i}"}).json() for i in range(3)]
            last = jobs[-1]["job_id"]
            with client.stream("GET", f"/api/queue/jobs/{last}/events") as stream:
                data = (
                    json.loads(line.removeprefix("data:")) for line in stream.iter_lines() if line.startswith("data:")
                )
                first = next(data)
                # Delivered as it happened, not buffered until the stream ended: the box has not finished the job yet.
                assert httpx.get(f"{server.url}/api/queue/jobs/{last}").json()["status"] != "done"
                assert first["status"] != "done"
                assert [event["status"] for event in data][-1] == "done"
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        socket_url = front.url.replace("https://", "wss://") + "/api/stats/live"
        with connect(socket_url, ssl=insecure, open_timeout=30) as socket:
            assert "lane" in json.loads(socket.recv(timeout=30))
        # The class view's one socket, through the front's live locations too (the instructor's token in its address).
        token = re.search(r"/instructor\?token=(\S+)", server.log())
        assert token is not None
        class_url = front.url.replace("https://", "wss://") + f"/api/class/live?token={token.group(1)}"
        with connect(class_url, ssl=insecure, open_timeout=30) as view:
            whole = json.loads(view.recv(timeout=30))
            assert [e["path"] for e in whole["entries"]] == ["tickets"] * 3


def test_a_box_death_answers_the_waiting_clients_502_from_the_front() -> None:
    with boxed(LAB_MEMORY_CAP_BYTES=str(CAP), LAB_BOX_SECONDS_PER_REVIEW="0") as box, fronted(box.url) as front:

        async def burst() -> list[httpx.Response | BaseException]:
            async with httpx.AsyncClient(base_url=front.url, verify=False, timeout=120) as client:
                calls = [client.post("/api/naive/predict", json={"text": f"{LONG_REVIEW} {i}"}) for i in range(12)]
                return await asyncio.gather(*calls, return_exceptions=True)

        results = asyncio.run(burst())
        # The front answers every client: the ones the dead box held get its 502, none a cut connection.
        assert all(isinstance(r, httpx.Response) for r in results), results
        statuses = [r.status_code for r in results if isinstance(r, httpx.Response)]
        assert 502 in statuses and set(statuses) <= {200, 502}

        wait_healthy(front.url, limit_s=120, verify=False)  # the next incarnation, through the front
        assert box.stats()["memory_deaths"] >= 1
