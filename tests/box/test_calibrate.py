"""The box's speed arithmetic and its CPU burning: pure functions and one real burn."""

import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from app.engine.model import Ranking, Wanted
from app.inside.burn import BurningScorer, burn
from app.inside.calibrate import PERIOD_US, choose_method, padding_for, quota_for, write_quota
from app.inside.meter import ReviewMeter


def test_quota_is_the_host_cost_as_a_fraction_of_the_target() -> None:
    assert quota_for(0.25, 1.0) == (25_000, PERIOD_US)
    assert quota_for(0.671, 1.0) == (67_100, PERIOD_US)


def test_a_short_target_gets_a_short_period_so_one_review_spans_about_ten() -> None:
    assert quota_for(0.03, 0.3) == (3_000, 30_000)


def test_a_quota_under_the_kernels_minimum_is_refused_so_the_box_burns_instead() -> None:
    assert quota_for(0.005, 1.0) is None  # 0.5 ms per 100 ms period: illegal
    assert padding_for(0.005, 1.0) == pytest.approx(199.0)


@pytest.mark.parametrize(("host", "target"), [(2.0, 1.0), (1.0, 1.0), (0.5, 0.0), (0.0, 1.0)])
def test_a_host_already_slower_than_the_target_or_no_target_is_not_slowed(host: float, target: float) -> None:
    assert quota_for(host, target) is None
    assert padding_for(host, target) == 0.0


def test_padding_makes_host_cost_plus_burn_equal_the_target() -> None:
    assert padding_for(0.25, 1.0) == pytest.approx(3.0)
    assert padding_for(2.0 / 2, 1.0) == 0.0  # twice as fast as a 2 s host = exactly the target
    assert 0.125 * (1 + padding_for(0.125, 1.0)) == pytest.approx(1.0)


def test_write_quota_v1_sets_period_then_quota_and_lifts_it_with_minus_one(tmp_path: Path) -> None:
    (tmp_path / "cpu.cfs_quota_us").write_text("-1")
    (tmp_path / "cpu.cfs_period_us").write_text("100000")
    write_quota(tmp_path, (5_000, 50_000))
    assert (tmp_path / "cpu.cfs_quota_us").read_text() == "5000"
    assert (tmp_path / "cpu.cfs_period_us").read_text() == "50000"
    write_quota(tmp_path, None)
    assert (tmp_path / "cpu.cfs_quota_us").read_text() == "-1"


def test_write_quota_v2_uses_cpu_max(tmp_path: Path) -> None:
    write_quota(tmp_path, (25_000, PERIOD_US))
    assert (tmp_path / "cpu.max").read_text() == "25000 100000"
    write_quota(tmp_path, None)
    assert (tmp_path / "cpu.max").read_text() == "max"


def test_burn_spends_cpu_time_not_wall_time_asleep() -> None:
    cpu0, wall0 = time.thread_time(), time.perf_counter()
    burn(0.05)
    cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
    assert cpu >= 0.05  # a sleep would pass the time with almost no CPU behind it
    assert wall >= 0.05  # two clocks read a moment apart: each against the bound, not against each other


class CpuScorer:
    """Spends a known amount of CPU per call, like a model would."""

    def __init__(self, cpu_s: float) -> None:
        self.cpu_s = cpu_s

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        burn(self.cpu_s * len(texts))
        return [[] for _ in texts]


def test_burning_scorer_pads_in_proportion_to_the_cpu_each_call_used() -> None:
    scorer = BurningScorer(CpuScorer(0.01), padding=3.0)
    started = time.thread_time()
    scorer.score(["a"])
    one = time.thread_time() - started
    started = time.thread_time()
    scorer.score(["a", "b", "c"])
    three = time.thread_time() - started
    assert one >= 0.04
    assert 2.0 <= three / one <= 4.5  # three reviews' CPU, three reviews' padding


def test_the_method_is_quota_with_a_cgroup_and_burn_without_or_where_no_quota_is_legal() -> None:
    assert choose_method(0.25, 1.0, has_cgroup=True) == "quota"
    assert choose_method(0.25, 1.0, has_cgroup=False) == "burn"
    assert choose_method(0.005, 1.0, has_cgroup=True) == "burn"  # no legal quota that small
    # A slow CPU starts at a whole core, under a quota the loop may lower when the host speeds up.
    assert choose_method(2.0, 1.0, has_cgroup=True) == "quota"


class StreamingCpuScorer(CpuScorer):
    """CpuScorer that streams: each review's CPU, then its answer; `wanted` is asked before each review."""

    def __init__(self, cpu_s: float) -> None:
        super().__init__(cpu_s)
        self.skipped: list[int] = []

    def score_each(self, texts: Sequence[str], wanted: Wanted | None = None) -> Iterator[tuple[int, Ranking]]:
        for i in range(len(texts)):
            if wanted is not None and not wanted(i):
                self.skipped.append(i)
                continue
            burn(self.cpu_s)
            yield i, []


def test_the_box_wrappers_pass_each_answer_on_as_it_comes_and_keep_the_padding_per_review() -> None:
    """The box wraps the model (meter outside burner): a ③ member must still be answered early, and padded."""
    inner = StreamingCpuScorer(0.01)
    box = ReviewMeter(BurningScorer(inner, padding=3.0))
    cpu_at: list[float] = []
    started = time.thread_time()
    for i, _ in box.score_each(["a", "b", "c"], lambda i: i != 1):
        cpu_at.append(time.thread_time() - started)
        assert i in (0, 2)
    assert inner.skipped == [1]
    assert len(cpu_at) == 2
    assert cpu_at[0] >= 0.04  # one review's CPU and its padding came before the first answer
    assert 1.5 <= cpu_at[1] / cpu_at[0] <= 3.0  # the second answer waited for the second review's, not the first's
