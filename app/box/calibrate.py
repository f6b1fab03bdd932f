"""Slow the CPU, not the clock, until the median sample review costs the box's target (~1 s) on any host.

At start-up the server times the median sample review on the host's full speed (CPU seconds),
then either sets a CPU quota on its own cgroup (fraction = host cost / target) or, without a
cgroup, burns CPU after every inference in proportion to the CPU that inference really used.
Either way N concurrent inferences share one slow CPU and each takes N times longer; a sleep
would let them wait in parallel. It then re-times the review: that is what the box achieved.
"""

import logging
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from app.box.burn import BurningScorer
from app.model import Scorer

log = logging.getLogger(__name__)

PERIOD_US = 100_000
# One review should span about this many periods, so its latency (not only the throughput) is the target's.
PERIODS_PER_REVIEW = 10
MIN_PERIOD_US = 1_000
MIN_QUOTA_US = 1_000  # the kernel refuses a smaller quota


@dataclass(frozen=True, slots=True)
class Calibration:
    """What the box measured and did; `achieved_s` is the median sample review re-timed (wall clock) after slowing."""

    target_s: float
    host_cpu_s: float
    method: str  # quota | burn | none
    # Wall clock of the same unslowed runs: above the target (a slow CPU, a throttled container) means no slowing.
    host_wall_s: float | None = None
    quota_us: int | None = None
    period_us: int | None = None
    padding: float | None = None
    achieved_s: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def quota_for(host_cpu_s: float, target_s: float) -> tuple[int, int] | None:
    """(quota_us, period_us) giving the fraction host/target of one CPU, or None: no slowing needed, or none legal.

    The period is at most a tenth of the target: a review then spreads over about ten
    periods instead of finishing at full speed inside one period's quota. A host (or model)
    so fast that the quota would fall under the kernel's 1 ms gets None and is burnt instead.
    """
    if padding_for(host_cpu_s, target_s) <= 0:
        return None
    period = max(MIN_PERIOD_US, min(PERIOD_US, round(target_s * 1e6 / PERIODS_PER_REVIEW)))
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


def choose_method(host_cpu_s: float, host_wall_s: float, target_s: float, *, has_cgroup: bool) -> str:
    """none when a review already costs the target here (in CPU or on the clock), quota with a cgroup and a
    legal quota, else burn."""
    if padding_for(host_cpu_s, target_s) <= 0 or host_wall_s >= target_s:
        return "none"
    if has_cgroup and quota_for(host_cpu_s, target_s) is not None:
        return "quota"
    return "burn"


def cpu_and_wall(scorer: Scorer, text: str) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    scorer.score([text])
    return time.process_time() - cpu, time.perf_counter() - wall


def slow_to_target(
    scorer: Scorer, text: str, target_s: float, cpu_dir: str | None, runs: int = 3
) -> tuple[Scorer, Calibration]:
    """Measure, slow, re-measure. Runs before the lane starts, so nothing else competes for the CPU."""
    if cpu_dir is not None:
        write_quota(Path(cpu_dir), None)  # a previous incarnation's quota must not be measured as the host
    scorer.score([text])  # warm caches and the arena; not timed
    timed = [cpu_and_wall(scorer, text) for _ in range(runs)]
    host_cpu = round(statistics.median(c for c, _ in timed), 4)
    host_wall = round(statistics.median(w for _, w in timed), 4)
    slowed: Scorer = scorer
    quota = quota_for(host_cpu, target_s)
    method = choose_method(host_cpu, host_wall, target_s, has_cgroup=cpu_dir is not None)
    if method == "none":
        calibration = Calibration(target_s, host_cpu, "none", host_wall)
    elif method == "quota" and cpu_dir is not None and quota is not None:
        write_quota(Path(cpu_dir), quota)
        calibration = Calibration(target_s, host_cpu, "quota", host_wall, quota_us=quota[0], period_us=quota[1])
    else:
        # No cgroup, or a quota under the kernel's minimum. Padding is applied to the inference
        # thread's own CPU time, so calibrate on the same clock.
        thread_cpu = _median(runs, lambda: cpu_seconds(scorer, text, time.thread_time))
        padding = padding_for(thread_cpu, target_s)
        slowed = BurningScorer(scorer, padding)
        calibration = Calibration(target_s, host_cpu, "burn", host_wall, padding=round(padding, 3))
    # One slowed run: each costs the target (seconds), and the lane's warm-up times the same review again.
    achieved = cpu_seconds(slowed, text, time.perf_counter)
    calibration = Calibration(**{**calibration.as_dict(), "achieved_s": round(achieved, 4)})
    log.warning(
        "Box calibration: the median sample review costs %.3f CPU s (%.3f s wall) on this host; target %.2f s; %s; "
        "achieved %.3f s.",
        host_cpu,
        host_wall,
        target_s,
        describe(calibration),
        achieved,
    )
    return slowed, calibration


def describe(c: Calibration) -> str:
    """A few words on how the CPU was slowed, for the log and the supervisor's one line."""
    if c.method == "quota" and c.quota_us is not None and c.period_us is not None:
        return f"CPU quota {100 * c.quota_us / c.period_us:.1f}% of one core"
    if c.method == "burn":
        return f"CPU burning x{c.padding} after each inference"
    return "host already slower than the target: not slowed"
