"""Slow the CPU, not the clock, until the median sample review costs the box's target (~1 s) on any host.

At start-up the server times the median sample review on the host's full speed (CPU seconds):
the first guess of a CPU quota on its own cgroup (fraction = host cost / target) or, without a
cgroup, of CPU burnt after every inference in proportion to the CPU that inference really used.
Either way N concurrent inferences share one slow CPU and each takes N times longer; a sleep
would let them wait in parallel. From then on the speed loop (app/inside/speed.py) keeps the
reviews that really run at the target; a restart starts from the loop's last setting.
"""

import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from app.engine.model import Scorer
from app.inside.burn import BurningScorer
from app.inside.meter import ReviewMeter
from app.inside.speed import Setting, SpeedLoop

log = logging.getLogger(__name__)

PERIOD_US = 100_000
# One review should span about this many periods, so its latency (not only the throughput) is the target's.
PERIODS_PER_REVIEW = 10
MIN_PERIOD_US = 1_000
MIN_QUOTA_US = 1_000  # the kernel refuses a smaller quota


@dataclass(frozen=True, slots=True)
class Calibration:
    """The start-up first guess; `achieved_s` is one median review timed at it. The loop's live value
    is `SpeedLoop.snapshot()`."""

    target_s: float
    host_cpu_s: float | None  # None when the setting was reused from the previous incarnation
    method: str  # quota | burn
    # Wall clock of the same unslowed runs: above the target (a slow CPU, a throttled container) means no slowing.
    host_wall_s: float | None = None
    fraction: float | None = None  # of one core, the loop's first setting
    achieved_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """Without the target: that is the loop's (`box.speed.target_s`), one value the instructor may turn."""
        return {k: v for k, v in asdict(self).items() if k != "target_s"}


def quota_for(host_cpu_s: float, target_s: float) -> tuple[int, int] | None:
    """(quota_us, period_us) giving the fraction host/target of one CPU, or None: no slowing needed, or none legal.

    The period is at most a tenth of the target: a review then spreads over about ten
    periods instead of finishing at full speed inside one period's quota. A host (or model)
    so fast that the quota would fall under the kernel's 1 ms gets None and is burnt instead.
    """
    if padding_for(host_cpu_s, target_s) <= 0:
        return None
    period = period_for(target_s)
    quota = round(host_cpu_s / target_s * period)
    return (quota, period) if quota >= MIN_QUOTA_US else None


def padding_for(host_cpu_s: float, target_s: float) -> float:
    """CPU seconds to burn per CPU second an inference used, so it costs target instead of host; 0 if slower."""
    if target_s <= 0 or host_cpu_s <= 0 or host_cpu_s >= target_s:
        return 0.0
    return target_s / host_cpu_s - 1.0


def write_quota(cpu_dir: Path, quota: tuple[int, int] | None) -> None:
    """cgroup v1 `cpu.cfs_period_us`/`cpu.cfs_quota_us`, or v2 `cpu.max`; None lifts the quota."""
    if (cpu_dir / "cpu.cfs_quota_us").exists():
        (cpu_dir / "cpu.cfs_quota_us").write_text("-1")
        if quota is not None:
            (cpu_dir / "cpu.cfs_period_us").write_text(str(quota[1]))
            (cpu_dir / "cpu.cfs_quota_us").write_text(str(quota[0]))
    else:
        (cpu_dir / "cpu.max").write_text("max" if quota is None else f"{quota[0]} {quota[1]}")


def _median(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def cpu_seconds(scorer: Scorer, text: str, clock: Callable[[], float]) -> float:
    started = clock()
    scorer.score([text])
    return clock() - started


def choose_method(host_cpu_s: float, target_s: float, *, has_cgroup: bool) -> str:
    """quota with a cgroup and a legal quota (a whole core when the host is already that slow: the loop
    may lower it later), else burn."""
    if has_cgroup and (padding_for(host_cpu_s, target_s) <= 0 or quota_for(host_cpu_s, target_s) is not None):
        return "quota"
    return "burn"


def cpu_and_wall(scorer: Scorer, text: str) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    scorer.score([text])
    return time.process_time() - cpu, time.perf_counter() - wall


def period_for(target_s: float) -> int:
    return max(MIN_PERIOD_US, min(PERIOD_US, round(target_s * 1e6 / PERIODS_PER_REVIEW)))


def first_guess(
    scorer: Scorer, text: str, target_s: float, cpu_dir: str | None, runs: int = 3
) -> tuple[Setting, Calibration]:
    """Time the median review at the host's full speed: the loop's first fraction. Runs before the lane
    starts, so nothing else competes for the box's CPU (other programs on the host may)."""
    if cpu_dir is not None:
        write_quota(Path(cpu_dir), None)  # a previous setting must not be measured as the host
    scorer.score([text])  # warm caches and the arena; not timed
    timed = [cpu_and_wall(scorer, text) for _ in range(runs)]
    host_cpu = round(statistics.median(c for c, _ in timed), 4)
    host_wall = round(statistics.median(w for _, w in timed), 4)
    method = choose_method(host_cpu, target_s, has_cgroup=cpu_dir is not None)
    if method == "burn":
        # Padding is applied to the inference thread's own CPU time, so guess on the same clock.
        host = _median(runs, lambda: cpu_seconds(scorer, text, time.thread_time))
        floor = 0.001
    else:
        host, floor = host_cpu, MIN_QUOTA_US / period_for(target_s)
    # A host whose clock already shows the target (busy, throttled) starts unslowed.
    fraction = 1.0 if host_wall >= target_s else min(max(host / target_s, floor), 1.0)
    setting = Setting(method, round(fraction, 4), target_s, floor)
    return setting, Calibration(target_s, host_cpu, method, host_wall)


def applier(cpu_dir: str | None, burning: BurningScorer | None) -> Callable[[Setting], None]:
    """What puts a setting into force: the quota file, or the burning scorer's padding."""

    def apply(s: Setting) -> None:
        if s.method == "quota" and cpu_dir is not None:
            period = period_for(s.target_s)
            write_quota(Path(cpu_dir), None if s.fraction >= 1.0 else (round(s.fraction * period), period))
        elif burning is not None:
            burning.padding = 1.0 / s.fraction - 1.0

    return apply


def slow_to_target(
    model: Scorer, text: str, target_s: float, cpu_dir: str | None, speed_file: str | None = None
) -> tuple[ReviewMeter, Calibration, SpeedLoop]:
    """The box's scorer (metered, maybe burning) and its speed loop, started from the setting a previous
    incarnation left (a restart must not measure whatever the dying box left behind) or from a measurement."""
    saved = Setting.load(Path(speed_file)) if speed_file else None
    usable = saved is not None and saved.target_s == target_s and (saved.method == "burn" or cpu_dir is not None)
    if saved is not None and usable:
        setting, calibration, guess = saved, Calibration(target_s, None, saved.method), "reused"
    else:
        setting, calibration = first_guess(model, text, target_s, cpu_dir)
        guess = "measured"
    burning = BurningScorer(model, 0.0) if setting.method == "burn" else None
    meter = ReviewMeter(burning or model)
    loop = SpeedLoop(
        setting,
        meter,
        applier(cpu_dir, burning),
        probe=lambda: meter.score([text]),
        save_to=Path(speed_file) if speed_file else None,
        first_guess=guess,
    )
    # One run at the first setting (it also feeds the loop): each should cost the target.
    achieved = cpu_seconds(meter, text, time.perf_counter)
    calibration = replace(calibration, fraction=setting.fraction, achieved_s=round(achieved, 4))
    host = (  # a reused setting measured nothing on the host: no number to give
        "the previous incarnation's setting"
        if calibration.host_cpu_s is None
        else f"host {calibration.host_cpu_s:.3f} CPU s per median review"
    )
    log.warning(
        "Box speed: first guess %s (%s), %s; target %.2f s; %s; achieved %.3f s.",
        guess,
        calibration.method,
        host,
        target_s,
        describe(setting),
        achieved,
    )
    return meter, calibration, loop


def describe(s: Setting) -> str:
    """A few words on how the CPU is slowed now, for the log and the supervisor's one line."""
    if s.fraction >= 1.0:
        return "not slowed (a whole core)"
    if s.method == "quota":
        return f"CPU quota {100 * s.fraction:.1f}% of one core"
    return f"CPU burning x{1 / s.fraction - 1:.3g} after each inference"
