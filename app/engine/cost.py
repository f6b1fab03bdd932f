"""What one inference will cost, from its length: seconds ≈ per_review_s × reviews + per_char_s × characters.

A review is scored against every topic, so its pair tokens (and its seconds) grow with its
length; one average per review makes a queue of long reviews look as cheap as short ones.
"""

from collections import deque
from dataclasses import dataclass

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
