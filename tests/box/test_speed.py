"""The box's speed loop on a fake host: a fake clock, and a model whose cost the test sets (no sleeps)."""

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from app.engine.model import Ranking
from app.inside.calibrate import slow_to_target
from app.inside.meter import ReviewMeter
from app.inside.speed import Setting, SpeedLoop, next_fraction


class FakeHost:
    """One core: a review alone costs `cpu_s` of it; the box gets min(its fraction, what others leave it)."""

    def __init__(self, cpu_s: float) -> None:
        self.now = 0.0
        self.cpu_s = cpu_s
        self.available = 1.0  # the share of the core other programs leave the box
        self.fraction = 1.0
        self.calls = 0

    def clock(self) -> float:
        return self.now

    def apply(self, s: Setting) -> None:
        self.fraction = s.fraction

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        self.calls += 1
        self.now += self.cpu_s * len(texts) / min(self.fraction, self.available)
        return [[] for _ in texts]


def loop_on(host: FakeHost, fraction: float, **kw: object) -> tuple[SpeedLoop, ReviewMeter]:
    meter = ReviewMeter(host, clock=host.clock, cpu=host.clock)
    setting = Setting("quota", fraction, 1.0, 0.01)
    return SpeedLoop(setting, meter, host.apply, clock=host.clock, **kw), meter  # type: ignore[arg-type]


def serve_reviews(loop: SpeedLoop, meter: ReviewMeter, host: FakeHost, seconds: float) -> list[tuple[float, float]]:
    """One review after another for `seconds` of fake time, a loop tick after each: (end, review seconds)."""
    seen = []
    end = host.now + seconds
    while host.now < end:
        started = host.now
        meter.score(["리뷰"])
        seen.append((host.now, host.now - started))
        loop.tick()
    return seen


def test_a_box_started_beside_a_hog_slows_itself_to_the_target_within_a_minute_of_the_hog_stopping() -> None:
    host = FakeHost(cpu_s=0.64)
    host.available = 0.5  # the hog takes half the core: a review costs 1.28 s at full quota
    loop, meter = loop_on(host, fraction=1.0)
    serve_reviews(loop, meter, host, 20)
    assert host.fraction == 1.0 and loop.snapshot()["at_bound"] is not None  # says why it cannot
    host.available = 1.0  # the hog stops
    stopped = host.now
    seen = serve_reviews(loop, meter, host, 60)
    settled = [s for end, s in seen if end - stopped >= 30]
    assert all(0.9 <= s <= 1.1 for s in settled)
    assert 0.9 <= loop.snapshot()["achieved_s"] <= 1.1 and loop.snapshot()["at_bound"] is None
    assert host.fraction == pytest.approx(0.64, rel=0.05)


def test_a_quiet_box_holds_the_target_when_the_host_gets_slower_and_says_when_it_cannot() -> None:
    host = FakeHost(cpu_s=0.5)
    loop, meter = loop_on(host, fraction=0.5)
    serve_reviews(loop, meter, host, 10)
    host.cpu_s = 0.8  # the same review now costs the host more CPU (a busy neighbour, a throttled VM)
    changed = host.now
    seen = serve_reviews(loop, meter, host, 60)
    assert all(0.9 <= s <= 1.1 for end, s in seen if end - changed >= 30)
    host.cpu_s = 1.5  # slower than the box even with a whole core
    serve_reviews(loop, meter, host, 30)
    snap = loop.snapshot()
    assert host.fraction == 1.0 and "slower than the box" in snap["at_bound"]


def test_the_fraction_moves_by_the_measured_ratio_in_bounded_steps_and_not_inside_the_dead_band() -> None:
    assert next_fraction(0.5, 1.02, 1.0, 0.01) == 0.5
    assert next_fraction(0.5, 1.21, 1.0, 0.01) == pytest.approx(0.55)  # half the error (in ratio) per step
    assert next_fraction(0.3, 10.0, 1.0, 0.01) == 0.6  # at most x2
    assert next_fraction(0.8, 4.0, 1.0, 0.01) == 1.0  # never above a core
    assert next_fraction(0.02, 0.1, 1.0, 0.015) == 0.015  # never under the legal quota


def test_the_meter_counts_overlapping_calls_as_sharing_the_core() -> None:
    """Two ① calls side by side for 2 s on one core each cost 1 s alone."""
    now = [0.0]
    entered, release = threading.Barrier(3), threading.Event()

    class Gated:
        def score(self, texts: Sequence[str]) -> list[Ranking]:
            entered.wait(timeout=10)
            release.wait(timeout=10)
            return [[]]

    meter = ReviewMeter(Gated(), clock=lambda: now[0], cpu=lambda: 0.0)
    threads = [threading.Thread(target=meter.score, args=(["a"],)) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait(timeout=10)
    now[0] = 2.0
    release.set()
    for t in threads:
        t.join(timeout=10)
    assert [s.solo_s for s in meter.samples()] == [pytest.approx(1.0), pytest.approx(1.0)]


def test_batches_are_not_samples_and_lengths_are_scaled_to_the_median_review() -> None:
    host = FakeHost(cpu_s=1.0)
    loop, meter = loop_on(host, fraction=1.0)
    meter.score(["a", "b"])
    assert meter.samples() == []
    meter.score(["x" * 80])  # twice the cost of the median review, by the length fit
    loop.relative_cost = lambda chars: 40 / chars
    assert loop.snapshot()["achieved_s"] == pytest.approx(0.5)


def test_an_idle_box_times_one_review_itself_to_stay_ready() -> None:
    host = FakeHost(cpu_s=0.5)
    meter = ReviewMeter(host, clock=host.clock, cpu=host.clock)
    loop = SpeedLoop(
        Setting("quota", 1.0, 1.0, 0.01),
        meter,
        host.apply,
        clock=host.clock,
        probe=lambda: meter.score(["중간 길이 리뷰"]),
        probe_idle_s=30,
    )
    host.now = 29.0
    loop.tick()
    assert host.calls == 0
    host.now = 31.0
    loop.tick()
    assert host.calls == 1 and loop.snapshot()["reviews"] == 1


def test_a_restart_reuses_the_saved_setting_instead_of_measuring(tmp_path: Path) -> None:
    quota = tmp_path / "cpu"
    quota.mkdir()
    (quota / "cpu.cfs_quota_us").write_text("-1")
    (quota / "cpu.cfs_period_us").write_text("100000")
    speed_file = tmp_path / "speed.json"
    Setting("quota", 0.62, 1.0, 0.01).save(speed_file)
    host = FakeHost(cpu_s=0.0)
    _, calibration, loop = slow_to_target(host, "리뷰", 1.0, str(quota), str(speed_file))
    assert host.calls == 1  # only the one run at the setting, no measurement at full speed
    assert calibration.host_cpu_s is None and loop.snapshot()["first_guess"] == "reused"
    assert (quota / "cpu.cfs_quota_us").read_text() == "62000"


def test_a_first_start_measures_and_saves_what_the_next_incarnation_will_reuse(tmp_path: Path) -> None:
    speed_file = tmp_path / "speed.json"
    host = FakeHost(cpu_s=0.0)
    _, calibration, loop = slow_to_target(host, "리뷰", 1.0, None, str(speed_file))
    assert host.calls > 1 and calibration.method == "burn"
    assert Setting.load(speed_file) == loop.setting
