"""Webhooks on a job's terminal state: signed per Standard Webhooks, retried, and never aimed inside (ssrf.py).

The delivery state lives on the job record, so a restart resumes it; `webhook-id` is
derived from the job id, so every retry (and every box) sends the same one.
"""

import asyncio
import copy
import functools
import json
import logging
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
from standardwebhooks.webhooks import Webhook

from app.errors import WebhookRefused
from app.jobs.models import Expect, Job, JobStatus, WebhookState
from app.jobs.ssrf import pinned_url, resolve_target
from app.jobs.store import JobStore
from app.settings import Settings

log = logging.getLogger(__name__)
# Due deliveries one round looks at: those whose target is at its limit are passed over, so a
# receiver that never answers holds back another's webhook only past this many waiting for it.
DUE_SCAN = 200
# Deliveries in flight at once, in all and per target (host:port): a receiver that never
# answers holds at most PER_TARGET slots, each for `webhook_timeout_s`, and nobody else's.
MAX_CONCURRENT = 16
PER_TARGET = 2


def _iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, tz=UTC).isoformat().replace("+00:00", "Z")


def payload(job: Job, model: str) -> dict[str, Any]:
    """Shaped like a hosted async-inference callback: type, time, and data with the output or null."""
    return {
        "type": f"review.job.{job.status.value}",
        "timestamp": _iso(job.finished_at),
        "data": {
            "id": job.id,
            "model": model,
            "status": job.status.value,
            "output": job.result if job.status is JobStatus.DONE else None,
            "errors": [] if job.error is None else [job.error],
            "attempts": job.attempts,
            "enqueued_at": _iso(job.enqueued_at),
            "started_at": _iso(job.started_at),
            "finished_at": _iso(job.finished_at),
            "waited_ms": job.waited_ms,
            "inference_ms": job.inference_ms,
        },
    }


def webhook_id(job: Job) -> str:
    return f"msg_{job.id}"


class WebhookSigner:
    """`WebhookSigner("whsec_…").headers(msg_id, body)`: the three Standard Webhooks headers."""

    def __init__(self, secret: str) -> None:
        self._webhook = Webhook(secret)

    def headers(self, msg_id: str, body: str, now: datetime | None = None) -> dict[str, str]:
        now = now or datetime.now(tz=UTC)
        return {
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": self._webhook.sign(msg_id, now, body),
        }


def target_of(url: str) -> str:
    """What the per-target limit counts: the host and port a delivery connects to."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    return f"{(parts.hostname or '').lower()}:{port}"


class WebhookDispatcher:
    """Delivers due webhooks concurrently, bounded in all and per target, so one slow receiver
    cannot delay another's. Each attempt is claimed in the store first, so two boxes never send
    the same attempt, and a box that dies (or stops) mid-send is retried later."""

    def __init__(
        self,
        store: JobStore,
        signer: WebhookSigner,
        *,
        model: str,
        allow_private: bool,
        max_attempts: int,
        backoff_s: float,
        timeout_s: float,
        max_concurrent: int = MAX_CONCURRENT,
        per_target: int = PER_TARGET,
    ) -> None:
        self._store = store
        self._signer = signer
        self._model = model
        self._allow_private = allow_private
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s
        self._timeout_s = timeout_s
        # No redirects (a 3xx could point inside) and no proxy from the environment.
        limits = httpx.Limits(max_connections=max_concurrent, max_keepalive_connections=max_concurrent)
        self._client = httpx.AsyncClient(timeout=timeout_s, follow_redirects=False, trust_env=False, limits=limits)
        self._max_concurrent = max_concurrent
        self._per_target = per_target
        self._sending: dict[str, asyncio.Task[None]] = {}  # job id → its delivery in flight
        self._by_target: dict[str, int] = {}

    @property
    def in_flight(self) -> int:
        return len(self._sending)

    async def close(self) -> None:
        """Stop deliveries in flight (each stays claimed and is retried after its claim lapses)."""
        tasks = list(self._sending.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._client.aclose()

    async def deliver_due(self) -> int:
        """One round: start a delivery for each due webhook with a free slot, without waiting
        for any to finish. Returns how many were started."""
        started = 0
        for job in await self._store.webhooks_due(time.time(), DUE_SCAN):
            if len(self._sending) >= self._max_concurrent:
                break
            target = target_of(job.webhook_url or "")
            if job.id in self._sending or self._by_target.get(target, 0) >= self._per_target:
                continue  # that receiver already has its share; others go ahead of it
            claim = await self._claim(job)
            if claim is None:
                continue
            self._by_target[target] = self._by_target.get(target, 0) + 1
            task = asyncio.get_running_loop().create_task(self._deliver(claim), name=f"webhook-{job.id[:8]}")
            self._sending[job.id] = task
            task.add_done_callback(functools.partial(self._sent, job.id, target))
            started += 1
        return started

    def _sent(self, job_id: str, target: str, _: "asyncio.Task[None]") -> None:
        self._sending.pop(job_id, None)
        self._by_target[target] -= 1
        if not self._by_target[target]:
            del self._by_target[target]

    async def _claim(self, job: Job) -> Job | None:
        """Take this attempt in the store; None if another box took it first, or if none is left.

        An attempt whose claim lapsed (its box died or stopped mid-send) counted as one, so a job
        whose attempts are all used ends `failed` here instead of being claimed again.
        """
        if job.webhook_attempts >= self._max_attempts:
            spent = copy.deepcopy(job)
            spent.webhook_state, spent.webhook_next_at = WebhookState.FAILED, None
            spent.webhook_error = spent.webhook_error or f"attempt {job.webhook_attempts} was never recorded"
            log.warning("webhook for job %s: %d attempts used, failed", job.id, job.webhook_attempts)
            await self._store.replace(spent, Expect(job.status, webhook_attempts=job.webhook_attempts))
            return None
        claim = copy.deepcopy(job)
        claim.webhook_attempts += 1
        # If this box dies mid-send, the attempt is due again once this passes.
        claim.webhook_next_at = time.time() + self._timeout_s + 5.0
        if not await self._store.replace(claim, Expect(job.status, webhook_attempts=job.webhook_attempts)):
            return None
        return claim

    async def _deliver(self, claim: Job) -> None:
        try:
            await self._attempt(claim)
        except Exception:  # a store hiccup: the claim lapses and the attempt is retried
            log.exception("webhook for job %s: recording the attempt failed", claim.id)

    async def _attempt(self, claim: Job) -> None:
        unexpected: Exception | None = None
        try:
            error = await self.send(claim)
        except Exception as exc:  # a bug, not a receiver's failure: its traceback, and the attempt still counts
            unexpected, error = exc, f"{type(exc).__name__}: {exc}"
        outcome = copy.deepcopy(claim)
        outcome.webhook_error = error
        if error is None:
            outcome.webhook_state, outcome.webhook_next_at = WebhookState.DELIVERED, None
        elif claim.webhook_attempts >= self._max_attempts:
            outcome.webhook_state, outcome.webhook_next_at = WebhookState.FAILED, None
        else:
            delay = self._backoff_s * 2 ** (claim.webhook_attempts - 1)
            outcome.webhook_next_at = time.time() + delay
        # One line per attempt; a traceback only for an error that is not a receiver's or a URL's.
        level = logging.INFO if error is None else logging.ERROR if unexpected else logging.WARNING
        attempt = f"webhook for job {claim.id}, attempt {claim.webhook_attempts}"
        log.log(level, "%s: %s", attempt, error or "delivered", exc_info=unexpected)
        await self._store.replace(outcome, Expect(claim.status, webhook_attempts=claim.webhook_attempts))

    async def send(self, job: Job) -> str | None:
        """POST the signed payload; None on 2xx, else the reason (the guard runs again here)."""
        assert job.webhook_url is not None
        try:
            target = await resolve_target(job.webhook_url, allow_private=self._allow_private)
        except WebhookRefused as refused:
            return f"refused at connect time: {refused.message}"
        body = json.dumps(payload(job, self._model), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        headers = {**self._signer.headers(webhook_id(job), body), "content-type": "application/json"}
        headers["host"] = urlsplit(target.url).netloc
        try:
            response = await self._client.post(
                pinned_url(target),
                content=body.encode(),
                headers=headers,
                extensions={"sni_hostname": target.host},
            )
        except (httpx.HTTPError, OSError, UnicodeError, ValueError) as exc:  # a receiver's or a URL's failure
            return f"{type(exc).__name__}: {exc}"
        if response.is_success:
            return None
        return f"receiver answered {response.status_code}"


def open_webhooks(settings: Settings, store: JobStore, manifest: dict[str, Any]) -> WebhookDispatcher | None:
    """None when no secret is set: unsigned webhooks are not sent, so `webhook_url` is refused."""
    if settings.webhook_secret is None:
        return None
    return WebhookDispatcher(
        store,
        WebhookSigner(settings.webhook_secret),
        model=str(manifest.get("name", "unknown")),
        allow_private=settings.webhook_allow_private,
        max_attempts=settings.webhook_max_attempts,
        backoff_s=settings.webhook_retry_backoff_s,
        timeout_s=settings.webhook_timeout_s,
    )
