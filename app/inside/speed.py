"""Hold the median review at the box's target while the host's speed changes: a closed loop.

One number says how slow the box is: `fraction`, the share of one core it may use. With a
cgroup it is the CPU quota (quota = fraction x period); without one the box burns
`1/fraction - 1` CPU seconds per CPU second an inference used. Either way a review alone takes
about its host cost divided by `fraction`, so when reviews measure `r` times the target the
next fraction is `fraction x r^0.5` (half the error per step, against the host's noise; bounded).
Start-up calibration is only the first guess; the loop keeps measuring the reviews that really
run (app/inside/meter.py) and, when nothing ran for a while, times one median review itself so an
idle box is ready.
"""

import json
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from app.engine.cost import LengthCost
from app.inside.meter import ReviewMeter, Sample, median_solo_s

log = logging.getLogger(__name__)

DEADBAND = 0.03  # within ±3 % of the target: leave it
MAX_STEP = 2.0
# Half the measured error per step: one review on a shared host varies by ±20 % at a fixed setting
# (docs/bench/box-speed-*.jsonl), and a full correction chased that noise.
GAIN = 0.5
MIN_SAMPLES = 5  # since the last change, before judging it
RECENT = 7  # judge on the latest few since the change
PATIENCE_S = 15.0  # ...or one sample, once this long has passed since the change


@dataclass(frozen=True, slots=True)
class Setting:
    """How slow the box is now; what the next incarnation starts from."""

    method: str  # quota | burn
    fraction: float  # of one core
    target_s: float
    min_fraction: float  # the quota's legal minimum, or a floor for burning

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)))
        tmp.replace(path)  # a reader never sees half a file

    @classmethod
    def load(cls, path: Path) -> "Setting | None":
        try:
            return cls(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            return None


def next_fraction(fraction: float, measured_s: float, target_s: float, low: float, high: float = 1.0) -> float:
    """The fraction that brings `measured_s` to `target_s`, within [low, high] and one x2 step; unchanged
    inside the dead band."""
    ratio = measured_s / target_s
    if abs(ratio - 1.0) <= DEADBAND:
        return fraction
    ratio = min(max(math.pow(ratio, GAIN), 1 / MAX_STEP), MAX_STEP)
    return min(max(fraction * ratio, low), high)


def bound_reason(fraction: float, measured_s: float | None, s: Setting) -> str | None:
    """Why the loop cannot reach the target, in a sentence, or None when it can."""
    if measured_s is None:
        return None
    if fraction >= 1.0 and measured_s > s.target_s * (1 + DEADBAND):
        return (
            f"a review takes {measured_s:.2f} s with a whole core: this host (or another program on the "
            "box's core) is slower than the box"
        )
    if fraction <= s.min_fraction and measured_s < s.target_s * (1 - DEADBAND):
        return f"a review takes {measured_s:.2f} s at the slowest legal setting: this host is too fast to slow further"
    return None


def cost_relative_to(length: LengthCost, chars: int) -> Callable[[int], float]:
    """How much cheaper than a review of `chars` characters another review is, by the lane's length fit."""

    def ratio(other: int) -> float:
        fit = length.fit
        return 1.0 if fit is None else fit.seconds(1, chars) / max(fit.seconds(1, other), 1e-9)

    return ratio


class SpeedLoop:
    """Judges the samples since its last change and applies a new fraction; `tick` is the whole step.

    `apply` writes the quota or sets the burning; `probe` times one median review when idle.
    Tests drive `tick(now)` with a fake clock and a fake meter; the server runs `start()`.
    """

    def __init__(
        self,
        setting: Setting,
        meter: ReviewMeter,
        apply: Callable[[Setting], None],
        *,
        relative_cost: Callable[[int], float] = lambda _chars: 1.0,
        probe: Callable[[], object] | None = None,
        probe_idle_s: float = 30.0,
        save_to: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
        first_guess: str = "measured",
    ) -> None:
        self.setting = setting
        self._meter = meter
        self._apply = apply
        self.relative_cost = relative_cost
        self._probe = probe
        self._probe_idle_s = probe_idle_s
        self._save_to = save_to
        self._clock = clock
        self.first_guess = first_guess
        self.changed_at = clock()
        self.targeted_at: float | None = None  # when the instructor last set a new target (app/knobs/box.py)
        self.adjustments = 0
        self.last_measured_s: float | None = None  # the median the last judgement saw
        self._lock = threading.Lock()  # a tick and a new target never interleave
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._apply(setting)
        self._save()

    def _save(self) -> None:
        if self._save_to is not None:
            try:
                self.setting.save(self._save_to)
            except OSError as exc:  # the box still runs; only a restart would re-measure
                log.warning("Cannot save the box's speed to %s: %s", self._save_to, exc)

    def judged(self, now: float) -> list[Sample] | None:
        """The samples that show the current setting, once there are enough to judge it."""
        fresh = self._meter.samples(since=self.changed_at)[-RECENT:]
        if len(fresh) >= MIN_SAMPLES or (fresh and now - self.changed_at >= PATIENCE_S):
            return fresh
        return None

    def tick(self, now: float | None = None) -> bool:
        """One step: maybe probe, then maybe change the fraction. True when it changed."""
        now = self._clock() if now is None else now
        if self._probe is not None and self._meter.running == 0 and now - self._meter.last_end >= self._probe_idle_s:
            self._probe()
        with self._lock:
            fresh = self.judged(now)
            measured = None if fresh is None else median_solo_s(fresh, self.relative_cost)
            if measured is None:
                return False
            self.last_measured_s = measured
            s = self.setting
            fraction = next_fraction(s.fraction, measured, s.target_s, s.min_fraction)
            if fraction == s.fraction:
                return False
            self.setting = replace(s, fraction=round(fraction, 4))
            self._apply(self.setting)
            self.changed_at, self.adjustments = now, self.adjustments + 1
            self._save()
        log.info("Box speed: reviews took %.3f s alone; CPU %.1f%% of a core now.", measured, 100 * fraction)
        return True

    def retarget(self, target_s: float, min_fraction: float) -> Setting:
        """A new target at once: the first guess scales the fraction by old/new target (a review alone costs
        its host cost / fraction), and only reviews from now on are judged or shown as achieved."""
        with self._lock:
            s = self.setting
            if target_s != s.target_s:
                fraction = min(max(s.fraction * s.target_s / target_s, min_fraction), 1.0)
                self.setting = replace(s, target_s=target_s, fraction=round(fraction, 4), min_fraction=min_fraction)
                self._apply(self.setting)
                self.changed_at = self.targeted_at = self._clock()
                self.last_measured_s = None  # judged against the old target
                self._save()
            return self.setting

    def snapshot(self) -> dict[str, Any]:
        """The one value /api/model, /api/stats, /metrics and the page show."""
        s = self.setting
        minute = self._meter.samples(since=self.targeted_at)  # the last minute, at the current target
        achieved = median_solo_s(minute, self.relative_cost)
        return {
            "target_s": s.target_s,
            "achieved_s": None if achieved is None else round(achieved, 3),
            "reviews": len(minute),
            "method": s.method,
            "cpu_fraction": s.fraction,
            "padding": round(1 / s.fraction - 1, 3) if s.method == "burn" else None,
            "first_guess": self.first_guess,
            "adjustments": self.adjustments,
            "at_bound": bound_reason(s.fraction, self.last_measured_s, s),
        }

    def start(self, relative_cost: Callable[[int], float] | None = None, every_s: float = 1.0) -> None:
        """Run `tick` every `every_s` on a thread; `relative_cost` scales lengths once the lane has a fit."""
        if relative_cost is not None:
            self.relative_cost = relative_cost
        self._thread = threading.Thread(target=self._run, args=(every_s,), name="box-speed", daemon=True)
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                self.tick()
            except Exception:  # the loop must never take the server down
                log.exception("box speed loop")

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
