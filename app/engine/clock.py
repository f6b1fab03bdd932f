"""What a review costs on the lane, learnt from every inference: the lane's, ③'s and ④'s hints all read it."""

from app.engine.cost import LengthCost


class ServiceClock:
    """Measured service time, so hints (Retry-After, ETA) come from reality.

    Two views: `per_review_s`, one average (EWMA) for any review, and `estimate_s`, which
    also counts characters once the length fit (app/engine/cost.py) can tell long from short.
    """

    def __init__(self, initial_s: float = 1.0, weight: float = 0.2, length: LengthCost | None = None) -> None:
        self._per_review_s = initial_s
        self._weight = weight
        self.length = length or LengthCost()
        self.samples = 0

    def observe(self, seconds: float, reviews: int, chars: int | None = None) -> None:
        per_review = seconds / max(reviews, 1)
        if self.samples == 0:
            self._per_review_s = per_review
        else:
            self._per_review_s += self._weight * (per_review - self._per_review_s)
        # A process's first inference pays one-off setup: it says nothing about length.
        if chars is not None and self.samples > 0:
            self.length.observe(seconds, reviews, chars)
        self.samples += 1

    @property
    def per_review_s(self) -> float:
        return self._per_review_s

    def estimate_s(self, reviews: int, chars: int) -> float:
        """Seconds for `reviews` reviews of `chars` characters in all (0 for none)."""
        if reviews <= 0:
            return 0.0
        fit = self.length.fit
        if fit is None:
            return self._per_review_s * reviews
        return fit.seconds(reviews, chars)
