"""An empty Idempotency-Key is refused, and a reused key never reveals the job holding it.

An empty header was one key shared by every client, and the 409 named the other client's
job id: enough to read or cancel that job.
"""

from typing import Any

import jsonschema_rs
import pytest

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


@pytest.mark.parametrize("key", ["", "   ", "\t"])
async def test_an_empty_idempotency_key_gets_422_in_the_error_shape(lab_client: LabClientFactory, key: str) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        response = await client.post("/api/queue/jobs", json={"text": "빈 키"}, headers={"Idempotency-Key": key})
        jobs = (await client.get("/api/stats")).json()["jobs"]
    assert response.status_code == 422
    body = response.json()
    assert set(body) == {"error", "detail"} and body["error"] == "invalid_job"
    assert "Idempotency-Key" in body["detail"]
    assert sum(jobs.values()) == 0  # nothing was stored


async def test_the_openapi_header_schema_refuses_what_the_server_refuses(lab_client: LabClientFactory) -> None:
    """Schemathesis (`--checks all`) sent schema-valid empty keys and got 422s the document did not
    announce (positive_data_acceptance, 91 of 1,050 ticket POSTs, 2026-11-30)."""
    async with lab_client(GatedScorer(gated=False)) as client:
        spec = (await client.get("/api/openapi.json")).json()
    parameters: list[dict[str, Any]] = spec["paths"]["/api/queue/jobs"]["post"]["parameters"]
    (header,) = [p for p in parameters if p["in"] == "header" and p["name"].lower() == "idempotency-key"]
    validator = jsonschema_rs.validator_for(header["schema"])
    for refused in ["", "   ", "\t"]:
        assert not validator.is_valid(refused), refused
    for accepted in ["a", " 2f1c-key ", None]:
        assert validator.is_valid(accepted), accepted


async def test_a_reused_key_409_does_not_name_the_other_clients_job(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        headers = {"Idempotency-Key": "shared-key"}
        first = await client.post("/api/queue/jobs", json={"text": "첫 손님"}, headers=headers)
        other = await client.post("/api/queue/jobs", json={"text": "다른 손님"}, headers=headers)
        scorer.open()
    assert first.status_code == 202 and other.status_code == 409
    assert other.json()["error"] == "idempotency_key_reused"
    assert first.json()["job_id"] not in other.text
