"""The class view's API in-process: only the instructor reads the lesson (JSON, CSV, filters, bounds), each request
is recorded once with what its client saw, a student names themselves with their cookie, and the view's one live
socket takes a live seat."""

import asyncio
import csv
import functools
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from app.contract import student
from app.main import create_app
from app.settings import Settings
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

KEYS = ["a" * 22, "b" * 22, "c" * 22]


TOKEN = "instructor-token-for-the-test"


@pytest.fixture
def lab(lab_client: LabClientFactory, tmp_path: Path) -> LabClientFactory:
    """The lab in-process with a known instructor token (kept in a private file, as the box keeps the lesson's)."""
    file = tmp_path / "instructor-token"
    file.write_text(TOKEN)
    file.chmod(0o600)
    return functools.partial(lab_client, instructor_token_file=file)


async def lesson(client: httpx.AsyncClient, **query: str) -> dict[str, Any]:
    answer = await client.get("/api/class/requests", params=query, headers={"Authorization": f"Bearer {TOKEN}"})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def test_only_the_instructor_reads_the_lesson(lab: LabClientFactory) -> None:
    async with lab(GatedScorer(gated=False)) as client:
        for where in (
            "/api/class/requests",
            "/api/class/requests?format=csv",
            "/api/class/requests?token=guess",
            "/class",
        ):
            refused = await client.get(where)
            assert refused.status_code == 403, where
            assert refused.json()["error"] == "instructor_only" and set(refused.json()) == {"error", "detail"}
        page = await client.get(f"/class?token={TOKEN}")
        assert page.status_code == 200 and "수업" in page.text
        assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"
        assert (await client.get(f"/api/class/requests?token={TOKEN}")).status_code == 200


async def test_each_request_is_recorded_once_with_what_its_client_saw(lab: LabClientFactory) -> None:
    async with lab(GatedScorer(gated=False), limited_seats=0) as client:
        seen = []
        for key, route, text in [
            (KEYS[0], "/api/batched/predict", "맛있어요"),
            (KEYS[1], "/api/queue/jobs", "번호표 주세요"),
            (KEYS[2], "/api/limited/predict", ""),  # bad input: 422, never reaches the lane
            (None, "/api/adaptive/predict", "주소로만"),
        ]:
            client.cookies.clear()
            if key is not None:
                client.cookies.set(student.COOKIE, key)
            seen.append(await client.post(route, json={"text": text}))
        body = await lesson(client)
    records = body["requests"]
    assert [r["status"] for r in records] == [a.status_code for a in seen] == [200, 202, 422, 200]
    assert [r["student"] for r in records] == [*KEYS, "address:127.0.0.1"]
    assert [r["name"] for r in records] == ["학생 1", "학생 2", "학생 3", "학생 4"]
    assert [r["path"] for r in records] == ["batched", "tickets", "limited", "adaptive"]
    assert [r["outcome"] for r in records] == ["served", "served", "error", "served"]
    assert records[2]["error"] == "invalid_review"
    timing = seen[0].headers["server-timing"]
    assert timing == f"wait;dur={records[0]['wait_ms']:.1f}, infer;dur={records[0]['infer_ms']:.1f}"
    assert records[1]["ticket"] == seen[1].json()["job_id"]
    assert all(r["arrived"] <= r["answered"] for r in records)
    assert [m["kind"] for m in body["marks"]] == ["start"]


async def test_a_refusal_carries_its_reason_and_a_ticket_its_end(lab: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab(scorer, limited_seats=0) as client:
        first = asyncio.create_task(client.post("/api/limited/predict", json={"text": "첫째"}))
        await asyncio.to_thread(scorer.wait_entered)
        waiting = (await lesson(client))["requests"]
        assert [r["outcome"] for r in waiting] == ["waiting"]
        refused = await client.post("/api/limited/predict", json={"text": "둘째"})
        ticket = await client.post("/api/queue/jobs", json={"text": "셋째"})
        scorer.open()
        await first
        job = ticket.json()["job_id"]
        for _ in range(300):  # a failure guard: the worker ends the ticket once the lane is open
            done = (await client.get(f"/api/queue/jobs/{job}")).json()
            if done["status"] == "done":
                break
            await asyncio.sleep(0.05)
        records = (await lesson(client))["requests"]
    assert refused.status_code == 429 and refused.json()["reason"] == "seats_full"
    assert [(r["status"], r["outcome"], r["error"], r["reason"]) for r in records[:2]] == [
        (200, "served", None, None),
        (429, "refused", "box_full", "seats_full"),
    ]
    assert records[1]["wait_ms"] is not None  # the refusal's own Server-Timing wait
    assert (records[2]["ticket_status"], records[2]["wait_ms"], records[2]["infer_ms"]) == (
        "done", done["waited_ms"], done["inference_ms"]
    )  # fmt: skip


async def test_csv_and_filters(lab: LabClientFactory) -> None:
    async with lab(GatedScorer(gated=False)) as client:
        for key in KEYS:
            client.cookies.set(student.COOKIE, key)
            await client.post("/api/limited/predict", json={"text": f"리뷰 {key[0]}"})
        client.cookies.set(student.COOKIE, KEYS[0])
        assert (await client.put("/api/class/me", json={"name": "=HYPERLINK(1)"})).status_code == 200
        await client.post("/api/batched/predict", json={"text": "다른 경로"})
        answer = await client.get(f"/api/class/requests?format=csv&token={TOKEN}")
        assert answer.headers["content-type"].startswith("text/csv")
        assert answer.headers["content-disposition"].startswith('attachment; filename="class-')
        rows = list(csv.DictReader(io.StringIO(answer.text)))
        assert [(r["student"], r["name"], r["path"], r["status"]) for r in rows] == [
            (KEYS[0], "'=HYPERLINK(1)", "limited", "200"),  # never a formula in the instructor's spreadsheet
            (KEYS[1], "학생 2", "limited", "200"),
            (KEYS[2], "학생 3", "limited", "200"),
            (KEYS[0], "'=HYPERLINK(1)", "batched", "200"),
        ]
        assert [r["id"] for r in (await lesson(client, path="batched"))["requests"]] == [4]
        assert [r["id"] for r in (await lesson(client, student=KEYS[1]))["requests"]] == [2]
        assert (await lesson(client, outcome="refused"))["requests"] == []
        since = rows[2]["arrived"]
        assert [r["id"] for r in (await lesson(client, since=since))["requests"]] == [3, 4]
        assert [r["id"] for r in (await lesson(client, until=since))["requests"]] == [1, 2]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        for bad in ("format=xml", "since=inf", "until=nan", "outcome=happy", f"student={'x' * 81}"):
            refused = await client.get(f"/api/class/requests?{bad}", headers=auth)
            assert refused.status_code == 422 and refused.json()["error"] == "invalid_request", bad


async def test_a_student_names_themselves_with_their_cookie(lab: LabClientFactory) -> None:
    async with lab(GatedScorer(gated=False)) as client:
        refused = await client.put("/api/class/me", json={"name": "민지"})
        assert refused.status_code == 400 and refused.json()["error"] == "no_student_key"
        assert (await client.get("/api/class/me")).json()["error"] == "no_student_key"
        client.cookies.set(student.COOKIE, KEYS[0])
        assert (await client.get("/api/class/me")).json() == {"number": None, "name": None, "nickname": ""}
        for bad in ("줄\n바꿈", "\u202e뒤집기", "가" * 21):
            answer = await client.put("/api/class/me", json={"name": bad})
            assert answer.status_code == 422 and answer.json()["error"] == "invalid_nickname", bad
        for bad_body in ({"name": 3}, {"nick": "민지"}, {"name": "가" * 201}):
            answer = await client.put("/api/class/me", json=bad_body)
            assert answer.status_code == 422 and answer.json()["error"] == "invalid_request", bad_body
        named = await client.put("/api/class/me", json={"name": " 민지 "})
        assert named.json() == {"number": 1, "name": "민지", "nickname": "민지"}
        await client.post("/api/limited/predict", json={"text": "이름 붙은 요청"})
        assert [r["name"] for r in (await lesson(client))["requests"]] == ["민지"]


async def test_with_the_record_off_nothing_is_recorded_and_the_view_is_not_there(lab: LabClientFactory) -> None:
    async with lab(GatedScorer(gated=False), lesson_record=False) as client:
        assert (await client.post("/api/limited/predict", json={"text": "기록 없음"})).status_code == 200
        answer = await client.get(f"/api/class/requests?token={TOKEN}")
        assert answer.status_code == 404 and answer.json()["error"] == "not_found"


@pytest.fixture
def sync_client(tmp_path: Path) -> Iterator[TestClient]:
    settings = Settings(warmup=False, job_store=f"sqlite:///{tmp_path / 'jobs.db'}", max_live_connections=1)
    with TestClient(create_app(settings, GatedScorer(gated=False))) as client:
        yield client


def test_the_live_socket_needs_the_token_and_takes_a_live_seat(sync_client: TestClient) -> None:
    token = sync_client.app.state.lab.knobs.token  # type: ignore[attr-defined]
    with pytest.raises(WebSocketDisconnect) as refused, sync_client.websocket_connect("/api/class/live?token=guess"):
        pass
    assert refused.value.code == 1008
    sync_client.cookies.set(student.COOKIE, KEYS[0])
    sync_client.post("/api/limited/predict", json={"text": "보이는 요청"})
    with sync_client.websocket_connect(f"/api/class/live?token={token}") as view:
        whole = view.receive_json()
        assert whole["kind"] == "whole" and [e["student"] for e in whole["entries"]] == [KEYS[0]]
        sync_client.post("/api/batched/predict", json={"text": "다음 요청"})
        paths: list[str] = []
        while "batched" not in paths:  # each half second's changes (the first may still repeat the last change)
            delta = view.receive_json()
            assert delta["kind"] == "delta"
            paths = [e["path"] for e in delta["entries"]]
        with sync_client.websocket_connect("/api/stats/live") as stats, pytest.raises(WebSocketDisconnect) as full:
            stats.receive_json()
        assert full.value.code == 1013  # one live seat, and the class view holds it
    with sync_client.websocket_connect("/api/stats/live") as stats:  # given back when the view left
        assert "lane" in stats.receive_json()
