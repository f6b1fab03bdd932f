"""Instructor knobs: students read them, only the token turns them; a turn applies at once and outlives a restart."""

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from fastapi import FastAPI

from app.main import create_app
from app.settings import Settings
from tests.fakes import GatedScorer

Opened = tuple[httpx.AsyncClient, FastAPI]
Opener = Callable[..., AbstractAsyncContextManager[Opened]]


@pytest.fixture
def open_lab_app(tmp_path: Path) -> Opener:
    """`async with open_lab_app(scorer) as (client, app)`: the app too, for its instructor token."""

    @asynccontextmanager
    async def opened(scorer: GatedScorer, **overrides: Any) -> AsyncIterator[Opened]:
        settings = Settings(
            warmup=False, job_store=f"sqlite:///{tmp_path / 'jobs.db'}", knobs_file=tmp_path / "knobs.json", **overrides
        )
        app = create_app(settings, scorer)
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lab", timeout=30) as client:
                yield client, app

    return opened


def as_instructor(app: FastAPI) -> dict[str, str]:
    return {"Authorization": f"Bearer {app.state.lab.knobs.token}"}


def value(body: dict[str, Any], setting: str) -> float:
    return float(next(k["value"] for k in body["knobs"] if k["setting"] == setting))


async def test_turning_a_knob_without_the_token_is_refused_in_the_one_shape(open_lab_app: Opener) -> None:
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        token = app.state.lab.knobs.token
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": token}, {"X-Token": token}):
            refused = await client.put("/api/knobs/limited_seats", json={"value": 8}, headers=headers)
            assert refused.status_code == 403, headers
            assert refused.json()["error"] == "instructor_only" and set(refused.json()) == {"error", "detail"}
        after = (await client.get("/api/knobs")).json()
    assert value(after, "limited_seats") == 4 and after["version"] == 0


async def test_eight_seats_admit_nine_of_twelve_at_once(open_lab_app: Opener) -> None:
    scorer = GatedScorer()
    async with open_lab_app(scorer) as (client, app):
        turned = await client.put("/api/knobs/limited_seats", json={"value": 8}, headers=as_instructor(app))
        assert turned.status_code == 200 and value(turned.json(), "limited_seats") == 8
        tasks = [
            asyncio.create_task(client.post("/api/limited/predict", json={"text": f"리뷰 {i}"})) for i in range(12)
        ]
        refused = []
        for next_done in asyncio.as_completed(tasks):
            refused.append(await next_done)
            if len(refused) == 3:
                break
        assert [r.status_code for r in refused] == [429] * 3
        scorer.release(9)
        answers = await asyncio.gather(*tasks)
        stats = (await client.get("/api/stats")).json()
        spec = (await client.get("/api/openapi.json")).json()
        page = (await client.get("/")).text
        metrics = (await client.get("/metrics")).text
    assert sorted(r.status_code for r in answers) == [200] * 9 + [429] * 3
    assert stats["paths"]["limited"]["capacity"] == 9
    assert stats["knobs"]["version"] == 1 and stats["knobs"]["last"]["setting"] == "limited_seats"
    assert stats["knobs"]["values"]["limited_seats"] == 8
    assert spec["paths"]["/api/limited/predict"]["post"]["summary"] == "② limited: 1 in flight + 8 seats"
    assert "1개 + 대기석 8" in page and "대기석 4" not in page  # a page (re)loaded now quotes the live value
    assert 'review_knob_changes_total{knob="limited_seats"} 1.0' in metrics
    assert 'review_knob_value{knob="limited_seats"} 8.0' in metrics


@pytest.mark.parametrize(
    ("setting", "value", "why"),
    [
        ("limited_seats", 51, "between 0 and 50"),
        ("limited_seats", 2.5, "whole number"),
        ("limited_seats", 1.5, "limited_seats moves in steps of 1 (seats) from 0: a whole number, not 1.5"),
        ("queue_max_jobs", 1.5, "steps of 1 (jobs)"),
        ("adaptive_target_reviews", 1.55, "adaptive_target_reviews moves in steps of 0.1 (reviews) from 0.5, not 1.55"),
        ("adaptive_target_reviews", 0.4, "between 0.5 and 10 reviews"),
        ("batch_window_s", -0.1, "between 0 and 1"),
        ("queue_max_jobs", 0, "between 1 and 1000"),
        ("box_seconds_per_review", 2, "host's own speed"),
        ("memory_cap_bytes", 700 * 2**20, "nothing enforces a memory cap"),
        ("nope", 1, "No knob"),
    ],
)
async def test_out_of_bounds_or_unknown_knobs_get_422(
    open_lab_app: Opener, setting: str, value: float, why: str
) -> None:
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        refused = await client.put(f"/api/knobs/{setting}", json={"value": value}, headers=as_instructor(app))
    assert refused.status_code == 422 and refused.json()["error"] == "invalid_knob"
    assert why in refused.json()["detail"]


async def test_the_adaptive_paths_knobs_take_the_fractions_their_range_and_step_promise(open_lab_app: Opener) -> None:
    """⑤'s target showed 1.5 within 0.5-10, and refused 1.5 and 0.5 as "not a whole number"."""
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        default = Settings().adaptive_target_reviews
        per_review_s = app.state.lab.paths["adaptive"].target_s / default
        listed = {k["setting"]: k for k in (await client.get("/api/knobs")).json()["knobs"]}
        assert {k: listed["adaptive_target_reviews"][k] for k in ("value", "low", "high", "step")} == {
            "value": default,
            "low": 0.5,
            "high": 10,
            "step": 0.1,
        }
        for setting, new in [("adaptive_target_reviews", v) for v in (0.5, 1.5, 10, 2.3)] + [
            ("adaptive_interval_reviews", v) for v in (1.5, 60, 1)
        ]:
            answer = await client.put(f"/api/knobs/{setting}", json={"value": new}, headers=as_instructor(app))
            assert answer.status_code == 200, answer.text
            assert value(answer.json(), setting) == new and answer.json()["last"]["new"] == new
        assert app.state.lab.paths["adaptive"].target_s == pytest.approx(2.3 * per_review_s)  # its owner took the last


async def test_every_knob_takes_its_low_its_high_and_one_step_and_refuses_half_a_step(open_lab_app: Opener) -> None:
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        knobs = (await client.get("/api/knobs")).json()["knobs"]
        assert {k["setting"] for k in knobs} >= {"limited_seats", "batch_window_s", "adaptive_target_reviews"}
        for knob in knobs:
            low, high, step = knob["low"], knob["high"], knob["step"]
            for new in (low + step, high, low):
                answer = await client.put(
                    f"/api/knobs/{knob['setting']}", json={"value": new}, headers=as_instructor(app)
                )
                assert answer.status_code == 200, (knob, new, answer.text)
                assert value(answer.json(), knob["setting"]) == new
            between = await client.put(
                f"/api/knobs/{knob['setting']}", json={"value": low + step / 2}, headers=as_instructor(app)
            )
            assert between.status_code == 422 and between.json()["error"] == "invalid_knob", (knob, between.text)
            assert f"steps of {step:g} " in between.json()["detail"], between.text


async def test_a_restart_keeps_a_fraction_and_says_nothing_of_knobs_never_turned(
    open_lab_app: Opener, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The knobs file keeps only the knobs an instructor turned, fractions as typed: a restart restores those in one
    plain line and never re-reads, or complains about, a default nobody touched."""
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        for setting, new in (("limited_seats", 6), ("adaptive_interval_reviews", 1.5)):
            answer = await client.put(f"/api/knobs/{setting}", json={"value": new}, headers=as_instructor(app))
            assert answer.status_code == 200, answer.text
    assert json.loads((tmp_path / "knobs.json").read_text()) == {"limited_seats": 6, "adaptive_interval_reviews": 1.5}
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="app.knobs"):
        async with open_lab_app(GatedScorer(gated=False)) as (client, app):
            body = (await client.get("/api/knobs")).json()
    assert value(body, "adaptive_interval_reviews") == 1.5 and value(body, "limited_seats") == 6
    assert value(body, "adaptive_target_reviews") == Settings().adaptive_target_reviews  # never turned: the default
    said = [r for r in caplog.records if r.name.startswith("app.knobs")]
    assert [r.levelno for r in said] == [logging.INFO], [r.getMessage() for r in said]
    line = said[0].getMessage()
    assert line.isascii() and "\n" not in line and len(line) < 200, line
    assert line.endswith("limited_seats = 6, adaptive_interval_reviews = 1.5"), line


async def test_a_restart_keeps_the_instructors_values(open_lab_app: Opener) -> None:
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        for setting, new in (("limited_seats", 8), ("batch_max", 4), ("queue_max_jobs", 50), ("batch_window_s", 0.1)):
            answer = await client.put(f"/api/knobs/{setting}", json={"value": new}, headers=as_instructor(app))
            assert answer.status_code == 200, answer.text
        first_token = app.state.lab.knobs.token
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        body = (await client.get("/api/knobs")).json()
        stats = (await client.get("/api/stats")).json()
        assert app.state.lab.knobs.token != first_token  # a new token each start: the old one turns nothing
        assert (
            await client.put(
                "/api/knobs/batch_max", json={"value": 2}, headers={"Authorization": f"Bearer {first_token}"}
            )
        ).status_code == 403
    assert [value(body, s) for s in ("limited_seats", "batch_max", "queue_max_jobs", "batch_window_s")] == [
        8,
        4,
        50,
        0.1,
    ]
    assert stats["paths"]["limited"]["capacity"] == 9


@pytest.mark.parametrize(
    "body",
    [
        b'{"value": "8"}',
        b'{"value": "  8  "}',
        b'{"value": "8e0"}',
        b'{"value": true}',
        b'{"value": false}',
        b'{"value": null}',
        b'{"value": [8]}',
        b'{"value": {"n": 8}}',
        b'{"value": NaN}',
        b'{"value": 1e400}',
        b'{"value": 8, "also": 1}',
        b"{}",
    ],
)
async def test_a_knob_takes_a_json_number_only(open_lab_app: Opener, body: bytes) -> None:
    """A knob takes a JSON number only: a string or a boolean coerced into seats would turn the box by a value the
    instructor never typed."""
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        headers = as_instructor(app) | {"Content-Type": "application/json"}
        refused = await client.put("/api/knobs/limited_seats", content=body, headers=headers)
        after = (await client.get("/api/knobs")).json()
    assert refused.status_code == 422 and refused.json()["error"] == "invalid_request", refused.text
    assert value(after, "limited_seats") == 4 and after["version"] == 0


@pytest.mark.parametrize(
    ("setting", "body", "status"),
    [
        ("batch_max_wait_s", b'{"value": -0.0}', 200),
        ("limited_seats", b'{"value": -0}', 200),
        ("queue_max_jobs", b'{"value": -0.0}', 422),
        ("batch_max", b'{"value": -0}', 422),
        ("limited_seats", b'{"value": 8.0}', 200),
        ("limited_seats", b'{"value": 8.000001}', 422),
    ],
)
async def test_minus_zero_is_zero_where_zero_is_within_bounds(
    open_lab_app: Opener, setting: str, body: bytes, status: int
) -> None:
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        headers = as_instructor(app) | {"Content-Type": "application/json"}
        answer = await client.put(f"/api/knobs/{setting}", content=body, headers=headers)
    assert answer.status_code == status, answer.text
    if status == 200:
        assert answer.json()["last"]["new"] in (0.0, 8.0) and "-0" not in answer.text
    else:
        assert answer.json()["error"] == "invalid_knob"


async def test_the_instructor_page_is_kept_from_referers_caches_and_frames(open_lab_app: Opener) -> None:
    async with open_lab_app(GatedScorer(gated=False)) as (client, app):
        page = await client.get("/instructor", params={"token": app.state.lab.knobs.token})
        student = await client.get("/")
    assert page.status_code == 200
    assert page.headers["referrer-policy"] == "no-referrer" and page.headers["cache-control"] == "no-store"
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["content-security-policy"] == "frame-ancestors 'none'"
    assert "x-frame-options" not in student.headers  # the students' page is unchanged
