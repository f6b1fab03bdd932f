"""Webhook attempts that fail in any way are counted and end `failed`; hosts are ASCII before they are kept."""

import logging
import time

import pytest

from app.errors import WebhookRefused
from app.jobs.in_memory import MemoryJobStore
from app.jobs.models import Job, JobStatus, WebhookState
from app.jobs.ssrf import ascii_url, resolve_target
from app.jobs.webhooks import WebhookDispatcher, WebhookSigner
from kit.webhook_receiver import webhook_receiver
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.jobs.test_webhooks import HOOKS, SECRET, webhook_settles
from tests.waiting import eventually

FULLWIDTH_LOOPBACK = "１２７.０.０.１"  # fullwidth digits that IDNA maps to 127.0.0.1, aimed at our receiver


async def test_a_fullwidth_host_is_kept_in_ascii_and_delivered(lab_client: LabClientFactory) -> None:
    """A host written in full-width digits must reach the HTTP client in ASCII: as written, every attempt fails to
    encode and the webhook stays pending forever."""
    async with webhook_receiver() as receiver, lab_client(GatedScorer(gated=False), **HOOKS) as client:
        url = receiver.url.replace("127.0.0.1", FULLWIDTH_LOOPBACK)
        submitted = await client.post("/api/queue/jobs", json={"text": "전각 숫자 주소", "webhook_url": url})
        assert submitted.status_code == 202, submitted.text
        (delivery,) = await receiver.wait_for(1)
        final = await webhook_settles(client, submitted.json()["job_id"], "delivered")
    assert delivery.headers["host"] == f"127.0.0.1:{receiver.port}"
    assert final["webhook_attempts"] == 1


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("http://bücher.example:8080/hook?a=1", "http://xn--bcher-kva.example:8080/hook?a=1"),
        ("https://９３.１８４.２１６.３４/hook", "https://93.184.216.34/hook"),
        ("http://example.org/훅", "http://example.org/훅"),  # only the host is encoded; the client quotes the path
    ],
)
def test_hosts_are_idna_encoded(url: str, kept: str) -> None:
    assert ascii_url(url) == kept


@pytest.mark.parametrize("url", ["http://a\u3000b.example/", "http://\u2488.example/", "http://ex\u0000ämple.com/"])
async def test_a_host_idna_cannot_encode_is_refused(url: str) -> None:
    with pytest.raises(WebhookRefused, match="internationalized"):
        await resolve_target(url, allow_private=True)


def dispatcher(store: MemoryJobStore, max_attempts: int = 3) -> WebhookDispatcher:
    return WebhookDispatcher(
        store, WebhookSigner(SECRET), model="m", allow_private=True, max_attempts=max_attempts, backoff_s=0, timeout_s=2
    )


async def pending_job(store: MemoryJobStore, attempts: int = 0) -> Job:
    now = time.time()
    job = Job(
        text="t",
        status=JobStatus.DONE,
        finished_at=now,
        webhook_url="http://127.0.0.1:9/hook",
        webhook_state=WebhookState.PENDING,
        webhook_next_at=now,
        webhook_attempts=attempts,
    )
    stored, _ = await store.add(job)
    return stored


async def rounds_until_settled(sender: WebhookDispatcher, store: MemoryJobStore, job_id: str) -> Job:
    for _ in range(50):  # a failure guard: each round is due at once (no backoff)
        await sender.deliver_due()

        async def sent() -> bool:
            return sender.in_flight == 0

        await eventually(sent)
        job = await store.get(job_id)
        assert job is not None
        if job.webhook_state is not WebhookState.PENDING:
            return job
    raise AssertionError("still pending after 50 rounds")


async def test_an_attempt_failing_with_any_exception_counts_and_the_last_one_fails(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryJobStore()
    sender = dispatcher(store)
    calls = 0

    async def broken_send(_: Job) -> str | None:
        nonlocal calls
        calls += 1
        raise UnicodeEncodeError("ascii", "９", 0, 1, "ordinal not in range(128)")

    sender.send = broken_send  # type: ignore[method-assign,assignment]
    job = await pending_job(store)
    with caplog.at_level(logging.INFO, logger="app.jobs.webhooks"):
        final = await rounds_until_settled(sender, store, job.id)
    await sender.close()
    assert (final.webhook_state, final.webhook_attempts, calls) == (WebhookState.FAILED, 3, 3)
    assert "UnicodeEncodeError" in (final.webhook_error or "")
    attempts = [r for r in caplog.records if "attempt" in r.getMessage()]
    assert len(attempts) == 3  # one line per attempt


async def test_an_expected_failure_is_one_line_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    store = MemoryJobStore()
    sender = dispatcher(store, max_attempts=2)
    job = await pending_job(store)  # port 9 on loopback: connection refused
    with caplog.at_level(logging.INFO, logger="app.jobs.webhooks"):
        final = await rounds_until_settled(sender, store, job.id)
    await sender.close()
    assert final.webhook_state is WebhookState.FAILED and final.webhook_attempts == 2
    lines = [r for r in caplog.records if r.name == "app.jobs.webhooks"]
    assert len(lines) == 2 and all(r.exc_info is None for r in lines), [r.getMessage() for r in lines]


async def test_attempts_used_up_by_lapsed_claims_end_failed_without_sending() -> None:
    """A box that died mid-send left its claim counted; the next round must not send a sixth time."""
    store = MemoryJobStore()
    sender = dispatcher(store, max_attempts=3)
    job = await pending_job(store, attempts=3)
    final = await rounds_until_settled(sender, store, job.id)
    await sender.close()
    assert (final.webhook_state, final.webhook_attempts) == (WebhookState.FAILED, 3)
