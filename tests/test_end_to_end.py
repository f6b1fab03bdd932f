"""Through real HTTP, a real uvicorn and the tiny ONNX model: every path answers as promised."""

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from app.paths.registry import PATHS, PathSpec
from kit.live import LiveServer, live_server, slowed
from kit.measure import server_timing

# Starts a real uvicorn server in a subprocess.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(LAB_BATCH_WINDOW_S="0.2") as running:
        yield running


def timing(response: httpx.Response) -> dict[str, float]:
    return server_timing(response.headers["Server-Timing"])


def test_model_is_the_tiny_one_and_says_random(server: LiveServer) -> None:
    model = httpx.get(f"{server.url}/api/model").json()
    assert model["weights"] == "random" and model["random_weights"] is True
    assert model["sha256"] and model["size_bytes"] > 0
    assert model["intra_op_threads"] == 1
    assert model["service_samples"] >= 1  # the warm-up inference was measured
    assert "RANDOM weights" in server.log()


@pytest.mark.parametrize("path", [p for p in PATHS if p.answer == "direct"], ids=lambda p: p.name)
def test_predict_lists_all_24_topics_best_first(server: LiveServer, path: PathSpec) -> None:
    response = httpx.post(f"{server.url}{path.route}", json={"text": f"{path.name}: 빵은 맛있는데 비싸요"})
    assert response.status_code == 200
    body = response.json()
    scores = [t["score"] for t in body["topics"]]
    assert len(scores) == 24 and scores == sorted(scores, reverse=True)
    assert body["top"] == body["topics"][0]
    assert response.headers["X-Cache"] == "miss"
    assert timing(response)["infer"] > 0


def test_batched_burst_shares_batches(server: LiveServer) -> None:
    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
            return await asyncio.gather(
                *(client.post("/api/batched/predict", json={"text": f"배치 리뷰 {i}"}) for i in range(6))
            )

    responses = asyncio.run(burst())
    sizes = [int(r.headers["X-Batch-Size"]) for r in responses]
    assert all(r.status_code == 200 for r in responses)
    assert max(sizes) > 1 and max(sizes) <= 8


def test_ticket_goes_from_202_to_done(server: LiveServer) -> None:
    submitted = httpx.post(f"{server.url}/api/queue/jobs", json={"text": "티켓으로 받은 리뷰"})
    assert submitted.status_code == 202
    ticket = submitted.json()
    assert ticket["status"] == "queued" and ticket["position"] == 0 and ticket["eta_seconds"] > 0
    deadline = time.monotonic() + 30
    while (job := httpx.get(f"{server.url}{submitted.headers['Location']}").json())["status"] != "done":
        assert time.monotonic() < deadline, job
        time.sleep(0.02)
    assert len(job["result"]["topics"]) == 24
    assert job["inference_ms"] > 0


def test_metrics_and_stats_are_served(server: LiveServer) -> None:
    metrics = httpx.get(f"{server.url}/metrics").text
    assert "review_requests_total" in metrics and "process_resident_memory_bytes" in metrics
    stats = httpx.get(f"{server.url}/api/stats").json()
    assert stats["process"]["rss_bytes"] > 0 and stats["lane"]["completed"] >= 1


def test_a_slowed_box_burns_cpu_up_to_the_target_and_reports_one_live_speed() -> None:
    with live_server(LAB_BOX_SECONDS_PER_REVIEW="0.3") as raw:
        unslowed = httpx.get(f"{raw.url}/api/model").json()["box"]
    with live_server(**slowed(0.3)) as slow:
        response = httpx.post(f"{slow.url}/api/limited/predict", json={"text": "느린 상자"})
        box = httpx.get(f"{slow.url}/api/model").json()["box"]
        stats = httpx.get(f"{slow.url}/api/stats").json()["box"]
        metrics = httpx.get(f"{slow.url}/metrics").text
    assert unslowed["calibration"] is None and unslowed["speed"] is None  # a bare server is never slowed
    assert response.status_code == 200
    calibration, speed = box["calibration"], box["speed"]
    # No cgroup outside the box: the tiny model (milliseconds) is padded with CPU work many times its cost.
    assert calibration["method"] == speed["method"] == "burn" and speed["padding"] > 10
    # Burnt CPU time cannot take less wall time than the target's share of it.
    assert calibration["achieved_s"] >= 0.8 * 0.3 > 10 * calibration["host_cpu_s"]
    # The loop's one value: the same target and method in /api/stats and /metrics, measured reviews behind it.
    assert speed["target_s"] == stats["speed"]["target_s"] == 0.3 and speed["reviews"] >= 1
    assert "review_box_target_seconds 0.3" in metrics and 'review_box_cpu_fraction{method="burn"}' in metrics
