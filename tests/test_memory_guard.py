"""The naive memory guard: a measured cost model, and a refusal before the model is touched."""

import pytest

from app.errors import MemoryWouldNotFit
from app.memory.guard import MemoryCost, MemoryGuard, measure_cost
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

MIB = 2**20


def test_fit_recovers_linear_and_quadratic_terms_from_differences() -> None:
    def truth(n: int) -> int:
        return 500 * n + 3 * n * n

    # The first reading carries an unknown offset (memory from earlier runs); only differences count.
    offset = 77 * MIB
    cost = MemoryCost.fit([(60, offset + truth(60)), (180, offset + truth(180)), (360, offset + truth(360))])
    assert cost.per_char == pytest.approx(500)
    assert cost.per_char2 == pytest.approx(3)
    assert cost.bytes_for("x" * 1000) == int(1.25 * truth(1000))


def test_fit_that_cannot_separate_the_terms_takes_the_larger_shape() -> None:
    noisy = MemoryCost.fit([(60, 0), (180, 6000), (360, 7000)])  # growth slowing down: not a parabola
    assert noisy.either
    assert noisy.bytes_for("x" * 100) == int(1.25 * 100 * 7000 / 300)  # short: the line is larger
    assert noisy.bytes_for("x" * 2000) == int(1.25 * 2000**2 * 7000 / (360**2 - 60**2))  # long: the parabola
    assert MemoryCost.fit([(60, 9), (180, 5), (360, 1)]).bytes_for("x" * 100) == 0


def test_measure_cost_reads_rss_after_each_longer_run() -> None:
    readings = iter([100 * MIB, 110 * MIB, 130 * MIB])
    scorer = GatedScorer(gated=False)
    cost = measure_cost(scorer, "리뷰", rss=lambda: next(readings))
    assert [len(call[0]) for call in scorer.calls] == [60, 180, 360]
    assert cost.per_char2 > 0 or cost.per_char > 0


def test_guard_counts_memory_promised_to_running_inferences() -> None:
    guard = MemoryGuard(1000 * MIB, MemoryCost(per_char=MIB / 1.25, per_char2=0), rss=lambda: 500 * MIB)
    first = guard.reserve("x" * 300, retry_after_s=2.0)  # 500 + 300 fits
    with pytest.raises(MemoryWouldNotFit) as refused:
        guard.reserve("x" * 300, retry_after_s=2.0)  # 500 + 300 promised + 300 does not
    assert refused.value.retry_after_s == 2.0
    guard.release(first)
    guard.reserve("x" * 300, retry_after_s=2.0)
    assert guard.refused == 1


async def test_naive_guard_refuses_with_503_and_never_runs_the_model(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer, naive_memory_guard=True, memory_cap_bytes=MIB) as client:
        refused = await client.post("/api/naive/predict", json={"text": "메모리가 모자라요"})
        assert refused.status_code == 503
        assert refused.json()["error"] == "memory_would_not_fit"
        assert int(refused.headers["Retry-After"]) >= 1
        assert (await client.get("/health")).status_code == 200
    assert ["메모리가 모자라요"] not in scorer.calls


async def test_naive_guard_admits_what_fits(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False), naive_memory_guard=True, memory_cap_bytes=2**40) as client:
        response = await client.post("/api/naive/predict", json={"text": "충분해요"})
    assert response.status_code == 200


async def test_naive_guard_is_off_by_default(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False), memory_cap_bytes=MIB) as client:
        response = await client.post("/api/naive/predict", json={"text": "가드 없음"})
    assert response.status_code == 200
