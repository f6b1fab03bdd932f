"""What one inference will cost, from its length: by characters for the lane's shared clock (any batch), by
tokens for one review (⑤'s promises).

A review is scored against every topic, so its pair tokens (and its seconds) grow with its
length; one average per review makes a queue of long reviews look as cheap as short ones.
"""

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Two features this far from collinear (1 - cos² of the angle between them) before the
# length term is trusted: with every review the same length the slope means nothing.
MIN_SPREAD = 0.02


@dataclass(frozen=True, slots=True)
class Fit:
    per_review_s: float
    per_char_s: float

    def seconds(self, reviews: int, chars: int) -> float:
        return self.per_review_s * reviews + self.per_char_s * chars


class LengthCost:
    """Least squares over the last `window` inferences (no intercept: no reviews costs nothing).

    A window rather than the whole history, so the fit follows a box that gets busier or a
    model that changes; refitted on every observation (a 2×2 solve, cheap next to an inference).
    `fit` is None until the observations can tell length from count: the caller falls back
    to its per-review average then.
    """

    def __init__(self, window: int = 64, min_samples: int = 4) -> None:
        self._seen: deque[tuple[int, int, float]] = deque(maxlen=window)
        self._min_samples = min_samples
        self.fit: Fit | None = None

    @property
    def samples(self) -> int:
        return len(self._seen)

    @property
    def largest(self) -> float:
        """The largest size per inference in the window: past it, the fit is an extrapolation."""
        return max((chars / reviews for reviews, chars, _ in self._seen), default=0.0)

    def observe(self, seconds: float, reviews: int, chars: int) -> None:
        if reviews <= 0 or seconds < 0:
            return
        self._seen.append((reviews, chars, seconds))
        self.fit = self._solve()

    def _solve(self) -> Fit | None:
        if len(self._seen) < self._min_samples:
            return None
        rr = sum(r * r for r, _, _ in self._seen)
        rc = sum(r * c for r, c, _ in self._seen)
        cc = sum(c * c for _, c, _ in self._seen)
        ry = sum(r * y for r, _, y in self._seen)
        cy = sum(c * y for _, c, y in self._seen)
        det = rr * cc - rc * rc
        if cc == 0 or det <= MIN_SPREAD * rr * cc:
            return None
        per_review = (ry * cc - cy * rc) / det
        per_char = (cy * rr - ry * rc) / det
        if per_char < 0 or per_review < 0:
            # Noise, not physics (longer is never cheaper): trust the average instead.
            return None
        return Fit(per_review, per_char)


def rising_curve(x: Sequence[float], y: Sequence[float]) -> tuple[float, float, float] | None:
    """(a, b, c) of seconds ≈ a + b·x + c·x² through the points, or None where they cannot carry a curve.

    Fitted for relative error (each point weighted by 1 / its seconds), so the many short reviews are not
    sacrificed to a few long ones. The square only where three lengths or more carry it and it bends up
    (attention adds cost as a review grows, it never saves it); else a line where two lengths carry one;
    never a curve that makes a longer review cheaper over the lengths seen (noise, not physics).
    """
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(xs) == 0 or np.any(ys <= 0):
        return None
    low, high = float(xs.min()), float(xs.max())
    for degree in (2, 1):
        if len(set(xs.tolist())) <= degree:
            continue
        found = [float(v) for v in np.polyfit(xs, ys, degree, w=1 / ys)[::-1]] + [0.0] * (2 - degree)
        a, b, c = found
        if c >= 0 and b + 2 * c * low >= 0 and b + 2 * c * high >= 0:  # the slope is a line: its two ends say
            return a, b, c
    return None


class TokenCost:
    """Seconds one review costs the lane ≈ a + b·t + c·t², t its pair's tokens (what the lane runs), fitted on
    the last `window` reviews measured.

    The square is attention's: on the twin (2026-12-05, AMD EPYC, one thread) 21 tokens took 0.38 s, 63 took
    1.00 s and 512 took 10.9 s, where a line through the short ones says 7.7 s. A review predicted short makes
    everyone admitted behind it late. `seconds` is None until the window holds reviews of different lengths.
    """

    def __init__(self, window: int = 64, min_samples: int = 4) -> None:
        self._seen: deque[tuple[int, float]] = deque(maxlen=window)
        self._min_samples = min_samples
        self._curve: tuple[float, float, float] | None = None

    @property
    def samples(self) -> int:
        return len(self._seen)

    @property
    def largest(self) -> int:
        """The most tokens in the window: past it, the curve is an extrapolation."""
        return max((tokens for tokens, _ in self._seen), default=0)

    def observe(self, tokens: int, seconds: float) -> None:
        if tokens <= 0 or seconds <= 0:
            return
        self._seen.append((tokens, seconds))
        if len(self._seen) >= self._min_samples:
            self._curve = rising_curve([t for t, _ in self._seen], [s for _, s in self._seen])

    def seconds(self, tokens: int) -> float | None:
        if self._curve is None:
            return None
        a, b, c = self._curve
        return max(0.0, a + b * tokens + c * tokens * tokens)
