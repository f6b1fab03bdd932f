"""Path 1: every request infers at once, concurrently with all others; nobody is refused."""

import asyncio

from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


async def test_naive_runs_requests_concurrently(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        tasks = [asyncio.create_task(client.post("/api/naive/predict", json={"text": f"리뷰 {i}"})) for i in range(4)]
        # All four are inside the model at the same moment: no lane, no queue.
        await asyncio.to_thread(scorer.wait_entered, 4)
        assert scorer.active == 4
        scorer.release(4)
        responses = await asyncio.gather(*tasks)
    assert [r.status_code for r in responses] == [200] * 4
    assert scorer.max_active == 4
