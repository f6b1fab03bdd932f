"""The `review_*` gauges move with real traffic and return to 0, read back through GET /metrics."""

import asyncio

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer
from tests.waiting import eventually


async def scrape(client: httpx.AsyncClient) -> dict[str, float]:
    """Every sample as `name{label="value",...}` → value, the way Prometheus would read it."""
    text = (await client.get("/metrics")).text
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
    return samples


def scraped_equals(client: httpx.AsyncClient, expected: dict[str, float]) -> "asyncio.Future[None]":
    async def matches() -> bool:
        samples = await scrape(client)
        return all(samples.get(key) == value for key, value in expected.items())

    return asyncio.ensure_future(eventually(matches))


def gauges(path: str, in_flight: float, waiting: float) -> dict[str, float]:
    return {f'review_in_flight{{path="{path}"}}': in_flight, f'review_waiting{{path="{path}"}}': waiting}


async def test_every_labelled_series_exists_before_any_traffic(lab_client: LabClientFactory) -> None:
    """rate() ignores a counter's first value: series born at 0 let Grafana see the first burst."""
    async with lab_client(GatedScorer(gated=False)) as client:
        samples = await scrape(client)
    for key in (
        'review_rejections_total{path="limited",reason="seats_full"}',
        'review_rejections_total{path="limited",reason="waited_too_long"}',
        'review_rejections_total{path="tickets",reason="job_queue_full"}',
        'review_requests_total{path="limited",status="429"}',
        'review_requests_total{path="tickets",status="202"}',
        'review_batches_total{reason="full"}',
        'review_batches_total{reason="timer"}',
        'review_cache_hits_total{path="tickets"}',
        'review_jobs{status="queued"}',
        'review_batch_size_bucket{le="8.0"}',
        "process_resident_memory_bytes{}",
    ):
        assert key in samples, key


async def test_limited_gauges_show_one_running_two_waiting_then_zero(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, limited_seats=2) as client:
        tasks = [asyncio.create_task(client.post("/api/limited/predict", json={"text": f"리뷰 {i}"})) for i in range(3)]
        await scraped_equals(client, gauges("limited", 1, 2) | {"review_lane_busy{}": 1})
        scorer.open()
        assert [r.status_code for r in await asyncio.gather(*tasks)] == [200] * 3
        await scraped_equals(client, gauges("limited", 0, 0) | {"review_lane_busy{}": 0})


async def test_naive_gauge_counts_every_concurrent_inference(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        tasks = [asyncio.create_task(client.post("/api/naive/predict", json={"text": f"리뷰 {i}"})) for i in range(3)]
        await scraped_equals(client, gauges("naive", 3, 0))
        scorer.open()
        await asyncio.gather(*tasks)
        await scraped_equals(client, gauges("naive", 0, 0))


async def test_batched_batch_queued_behind_the_lane_counts_as_waiting(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, batch_window_s=60.0, batch_max=2) as client:
        tasks = [asyncio.create_task(client.post("/api/batched/predict", json={"text": f"리뷰 {i}"})) for i in range(5)]
        # One batch of 2 on the lane, one full batch of 2 queued behind it, one review still gathering.
        await scraped_equals(client, gauges("batched", 2, 3))
        scorer.release(1)
        await scraped_equals(client, gauges("batched", 2, 1))
        scorer.open()
        last = await client.post("/api/batched/predict", json={"text": "리뷰 5"})  # fills the open batch
        assert [r.status_code for r in [*await asyncio.gather(*tasks), last]] == [200] * 6
        await scraped_equals(client, gauges("batched", 0, 0))


async def test_ticket_gauges_and_jobs_by_status(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer, queue_max_jobs=2) as client:
        first = await client.post("/api/queue/jobs", json={"text": "리뷰 0"})
        await asyncio.to_thread(scorer.wait_entered)
        submitted = [first, *[await client.post("/api/queue/jobs", json={"text": f"리뷰 {i}"}) for i in (1, 2)]]
        refused = await client.post("/api/queue/jobs", json={"text": "자리 없음"})
        assert [r.status_code for r in [*submitted, refused]] == [202, 202, 202, 429]
        await scraped_equals(
            client, gauges("tickets", 1, 2) | {'review_jobs{status="running"}': 1, 'review_jobs{status="queued"}': 2}
        )
        scorer.open()
        await scraped_equals(client, gauges("tickets", 0, 0) | {'review_jobs{status="done"}': 3})
        # A cached review becomes a done job at once; the scrape counts it without waiting for the worker.
        hit = await client.post("/api/queue/jobs", json={"text": "리뷰 0"})
        assert hit.headers["X-Cache"] == "hit"
        samples = await scrape(client)
    assert samples['review_jobs{status="done"}'] == 4


async def test_lane_busy_seconds_count_only_while_the_lane_infers(lab_client: LabClientFactory) -> None:
    """A counter of busy seconds: rate() gives the exact utilisation, where a sampled 0/1 gauge guesses."""
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        idle = (await scrape(client))["review_lane_busy_seconds_total{}"]
        task = asyncio.create_task(client.post("/api/limited/predict", json={"text": "리뷰"}))
        await asyncio.to_thread(scorer.wait_entered)
        busy_1 = (await scrape(client))["review_lane_busy_seconds_total{}"]
        busy_2 = (await scrape(client))["review_lane_busy_seconds_total{}"]
        scorer.open()
        assert (await task).status_code == 200
        done_1 = (await scrape(client))["review_lane_busy_seconds_total{}"]
        done_2 = (await scrape(client))["review_lane_busy_seconds_total{}"]
    assert idle == 0
    assert 0 < busy_1 <= busy_2 <= done_1  # grows while the model runs, never runs back
    assert done_1 == done_2  # and stands still once the lane is idle


async def test_two_apps_in_one_process_never_share_a_number(lab_client: LabClientFactory) -> None:
    """Each app has its own registry: a refusal counted by one lab is not seen by the next."""
    async with lab_client(GatedScorer(gated=False)) as client:
        assert (await client.post("/api/limited/predict", json={"text": "리뷰"})).status_code == 200
        first = await scrape(client)
    async with lab_client(GatedScorer(gated=False)) as client:
        second = await scrape(client)
    assert first['review_requests_total{path="limited",status="200"}'] == 1
    assert second['review_requests_total{path="limited",status="200"}'] == 0
