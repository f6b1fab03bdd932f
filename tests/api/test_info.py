"""Stats, model, health and the API docs."""

from app.paths.registry import PATHS
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


async def test_stats_model_health_and_docs(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        await client.post("/api/limited/predict", json={"text": "빵이 맛있어요"})
        stats = (await client.get("/api/stats")).json()
        model = (await client.get("/api/model")).json()
        health = await client.get("/health")
        docs = await client.get("/api/docs")
        spec = (await client.get("/api/openapi.json")).json()
    assert stats["lane"]["completed"] == 1
    assert stats["process"]["rss_bytes"] > 0
    assert set(stats["paths"]) == {p.name for p in PATHS}
    assert model["random_weights"] is True
    assert model["service_samples"] == 1
    assert health.status_code == 200
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    assert "/api/limited/predict" in spec["paths"]
