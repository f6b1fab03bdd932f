"""Webhooks: signed per Standard Webhooks, retried with one webhook-id, resumed after a restart, never aimed inside."""

import base64
import ipaddress
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from app.jobs.factory import open_store
from app.jobs.in_memory import MemoryJobStore
from app.jobs.models import Expect, Job, JobStatus, WebhookState
from app.jobs.ssrf import is_blocked
from app.jobs.webhooks import WebhookDispatcher, WebhookSigner, payload
from kit.webhook_receiver import webhook_receiver
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.jobs.conftest import REDIS_URL
from tests.waiting import eventually

SECRET = "whsec_" + base64.b64encode(b"review-lab-test-secret-32-bytes!").decode()
HOOKS = {
    "webhook_secret": SECRET,
    "webhook_allow_private": True,  # the receiver listens on 127.0.0.1
    "webhook_retry_backoff_s": 0.01,
    "job_poll_s": 0.02,
    "job_lease_s": 0.6,
}


async def job_state(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    body: dict[str, Any] = (await client.get(f"/api/queue/jobs/{job_id}")).json()
    return body


async def webhook_settles(client: httpx.AsyncClient, job_id: str, state: str) -> dict[str, Any]:
    async def reached() -> bool:
        return bool((await job_state(client, job_id))["webhook_state"] == state)

    await eventually(reached)
    return await job_state(client, job_id)


async def test_done_job_posts_a_signed_payload_with_the_output(lab_client: LabClientFactory) -> None:
    async with webhook_receiver() as receiver, lab_client(GatedScorer(gated=False), **HOOKS) as client:
        submitted = await client.post("/api/queue/jobs", json={"text": "웹훅 리뷰", "webhook_url": receiver.url})
        job_id = submitted.json()["job_id"]
        (delivery,) = await receiver.wait_for(1)
        final = await webhook_settles(client, job_id, "delivered")
    verified = Webhook(SECRET).verify(delivery.body, delivery.headers)
    assert delivery.headers["webhook-id"] == f"msg_{job_id}"
    assert verified["type"] == "review.job.done" and verified["timestamp"].endswith("Z")
    data = verified["data"]
    assert data["id"] == job_id and data["model"] == "GatedScorer" and data["status"] == "done"
    assert data["output"] == final["result"] and data["errors"] == []
    assert final["webhook_attempts"] == 1


async def test_a_tampered_body_does_not_verify(lab_client: LabClientFactory) -> None:
    async with webhook_receiver() as receiver, lab_client(GatedScorer(gated=False), **HOOKS) as client:
        await client.post("/api/queue/jobs", json={"text": "서명 확인", "webhook_url": receiver.url})
        (delivery,) = await receiver.wait_for(1)
    with pytest.raises(Exception, match="signature"):
        Webhook(SECRET).verify(delivery.body.replace(b"done", b"fail"), delivery.headers)


async def test_failed_job_payload_has_null_output_and_the_error(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False, fail_on="망가진 리뷰")
    async with webhook_receiver() as receiver, lab_client(scorer, **HOOKS) as client:
        await client.post("/api/queue/jobs", json={"text": "망가진 리뷰", "webhook_url": receiver.url})
        (delivery,) = await receiver.wait_for(1)
    body = json.loads(delivery.body)
    assert body["type"] == "review.job.failed"
    assert body["data"]["output"] is None and "ValueError" in body["data"]["errors"][0]


async def test_delivery_is_retried_with_the_same_webhook_id(lab_client: LabClientFactory) -> None:
    async with webhook_receiver(answers=[500, 503]) as receiver, lab_client(GatedScorer(gated=False), **HOOKS) as c:
        job_id = (await c.post("/api/queue/jobs", json={"text": "재시도", "webhook_url": receiver.url})).json()[
            "job_id"
        ]
        deliveries = await receiver.wait_for(3)
        final = await webhook_settles(c, job_id, "delivered")
    assert {d.headers["webhook-id"] for d in deliveries} == {f"msg_{job_id}"}
    assert all(Webhook(SECRET).verify(d.body, d.headers) for d in deliveries)
    assert final["webhook_attempts"] == 3


async def test_delivery_gives_up_after_the_last_attempt(lab_client: LabClientFactory) -> None:
    async with (
        webhook_receiver(answers=[500] * 10) as receiver,
        lab_client(GatedScorer(gated=False), webhook_max_attempts=2, **HOOKS) as client,
    ):
        body = {"text": "끝내 실패", "webhook_url": receiver.url}
        job_id = (await client.post("/api/queue/jobs", json=body)).json()["job_id"]
        final = await webhook_settles(client, job_id, "failed")
    assert final["webhook_attempts"] == 2 and len(receiver.deliveries) == 2


@pytest.mark.parametrize("store_kind", ["sqlite", "redis"])
async def test_delivery_state_survives_a_restart(
    lab_client: LabClientFactory, tmp_path: Path, redis_prefix: str, store_kind: str
) -> None:
    store = f"sqlite:///{tmp_path / 'hooks.db'}" if store_kind == "sqlite" else f"{REDIS_URL}?prefix={redis_prefix}"
    # A backoff longer than the test: no second attempt can happen in the first life.
    settings = {**HOOKS, "webhook_retry_backoff_s": 60.0, "job_store": store}
    async with webhook_receiver(answers=[500]) as receiver:
        async with lab_client(GatedScorer(gated=False), **settings) as client:
            body = {"text": "재시작 후 배달", "webhook_url": receiver.url}
            job_id = (await client.post("/api/queue/jobs", json=body)).json()["job_id"]
            await receiver.wait_for(1)
            await webhook_settles(client, job_id, "pending")

            async def attempt_recorded() -> bool:
                return bool((await job_state(client, job_id))["webhook_attempts"] == 1)

            await eventually(attempt_recorded)
        # Between the two lives, only the store remembers; bring the backed-off retry forward.
        kept = await open_store(store)
        job = await kept.get(job_id)
        assert job is not None and job.webhook_state is WebhookState.PENDING and job.webhook_attempts == 1
        assert job.webhook_next_at is not None and job.webhook_next_at > time.time() + 30
        assert job.webhook_error == "receiver answered 500"
        job.webhook_next_at = time.time()
        assert await kept.replace(job, Expect(JobStatus.DONE, webhook_attempts=1))
        await kept.close()
        async with lab_client(GatedScorer(gated=False), **settings) as client:
            final = await webhook_settles(client, job_id, "delivered")
    first, second = receiver.deliveries
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == f"msg_{job_id}"
    assert final["webhook_attempts"] == 2


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "http://10.0.0.1/hook",
        "http://192.168.1.10/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://100.100.100.200/",
        "http://[::1]/hook",
        "http://[::ffff:127.0.0.1]/hook",
        "http://0.0.0.0/",
        "ftp://example.org/hook",
        "http://user:pw@127.0.0.1/hook",
        "not a url",
    ],
)
async def test_webhook_targets_inside_are_refused_at_submit(lab_client: LabClientFactory, url: str) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer, webhook_secret=SECRET) as client:
        response = await client.post("/api/queue/jobs", json={"text": "내부 주소", "webhook_url": url})
    assert response.status_code == 422
    assert response.json()["error"] == "webhook_refused"
    assert scorer.calls == []


async def test_webhook_url_is_refused_when_no_secret_is_set(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False), webhook_allow_private=True) as client:
        response = await client.post("/api/queue/jobs", json={"text": "리뷰", "webhook_url": "http://127.0.0.1/x"})
    assert response.status_code == 422 and "LAB_WEBHOOK_SECRET" in response.json()["detail"]


async def test_connect_time_guard_refuses_without_connecting() -> None:
    """A target accepted earlier (e.g. DNS changed since) is checked again before each POST."""
    async with webhook_receiver() as receiver:
        dispatcher = WebhookDispatcher(
            MemoryJobStore(),
            WebhookSigner(SECRET),
            model="m",
            allow_private=False,
            max_attempts=3,
            backoff_s=0.01,
            timeout_s=2,
        )
        job = Job(text="t", status=JobStatus.DONE, finished_at=time.time(), webhook_url=receiver.url)
        error = await dispatcher.send(job)
        await dispatcher.close()
    assert error is not None and error.startswith("refused at connect time")
    assert receiver.deliveries == []


@pytest.mark.parametrize(
    ("address", "blocked"),
    [("8.8.8.8", False), ("2606:4700::1111", False), ("127.0.0.1", True), ("172.16.0.1", True), ("fd00::1", True)],
)
def test_only_global_addresses_pass(address: str, blocked: bool) -> None:
    assert is_blocked(ipaddress.ip_address(address)) is blocked


def test_payload_of_an_expired_job_has_no_output() -> None:
    job = Job(text="t", status=JobStatus.EXPIRED, finished_at=time.time(), error="waited too long")
    body = payload(job, "bge")
    assert body["type"] == "review.job.expired" and body["data"]["output"] is None
    assert body["data"]["errors"] == ["waited too long"] and body["data"]["model"] == "bge"
