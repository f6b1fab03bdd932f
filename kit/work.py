"""Served work: what each review costs the lane alone, fitted on reviews measured one at a time from the mix offered.

A count of answers rewards serving short reviews: at 5× ⑤ answered 1.27 reviews/s against a capacity of 1.09 by
serving reviews of 38.6 characters out of an offered 61.0 (issue 45). So a review's one-at-a-time cost is predicted
from its length in tokens (what the lane runs), by a fit on reviews of the same mix sent one at a time, and a run
reports the served reviews' summed cost over its window: the share of the lane's time spent on answers, each
weighted by what it costs alone. The capacity is 1 / the mean predicted cost over the mix offered, not over the
handful of reviews measured. Client-side tooling: the server never imports this.
"""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.cost import rising_curve
from app.engine.model import load_topics
from app.settings import PROJECT_ROOT, Settings
from kit.load import Fate, LoadResult, TextSource, finished_at

TOPICS_FILE = PROJECT_ROOT / "app" / "data" / "topics.json"


@dataclass(frozen=True)
class Length:
    chars: int
    tokens: int | None  # None: no tokenizer at hand


class Lengths:
    """A review's characters and tokens: the tokens of its pair with the first topic, truncated as the lab truncates
    (`RerankerModel.count_tokens`). A 2,000-character review stops at 512 tokens, and so does its cost."""

    def __init__(self, model_dir: Path | None, topics_file: Path = TOPICS_FILE, max_tokens: int | None = None) -> None:
        self._tokenizer: Any = None
        self._topic = load_topics(topics_file)[0].query
        tokenizer_file = None if model_dir is None else model_dir / "tokenizer.json"
        if tokenizer_file is not None and tokenizer_file.exists():
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
            self._tokenizer.no_padding()
            limit = Settings().max_tokens if max_tokens is None else max_tokens
            self._tokenizer.enable_truncation(max_length=limit, strategy="only_second")

    @property
    def unit(self) -> str:
        return "chars" if self._tokenizer is None else "tokens"

    def of(self, texts: Sequence[str]) -> list[Length]:
        if self._tokenizer is None:
            return [Length(len(t), None) for t in texts]
        encodings = self._tokenizer.encode_batch([(self._topic, t) for t in texts])
        return [Length(len(t), len(e.ids)) for t, e in zip(texts, encodings, strict=True)]


def mean_length(lengths: Sequence[Length]) -> dict[str, float | None]:
    """Mean characters and tokens (None where there is no review, or no tokenizer)."""
    tokens = [x.tokens for x in lengths if x.tokens is not None]
    return {
        "chars": round(statistics.mean(x.chars for x in lengths), 1) if lengths else None,
        "tokens": round(statistics.mean(tokens), 1) if tokens and len(tokens) == len(lengths) else None,
    }


@dataclass(frozen=True)
class CostFit:
    """Seconds a review costs the lane alone ≈ a + b·x + c·x², x its tokens (or characters without a tokenizer).

    The square is attention's: on the twin (2026-12-05, AMD EPYC, one thread) 21 tokens took 0.38 s, 63 took
    1.00 s and 512 took 10.9 s, where a straight line through the short ones says 7.7 s. Fitted for relative
    error (each point weighted by 1 / its seconds), so the many short reviews are not sacrificed to a few long ones.
    """

    unit: str  # "tokens" or "chars"
    a_s: float
    b_s: float
    c_s: float
    samples: int
    worst_error: float  # the largest relative error on the reviews it was fitted on

    def seconds(self, length: Length) -> float:
        x = size(length, self.unit)
        return max(0.0, self.a_s + self.b_s * x + self.c_s * x * x)

    def row(self) -> dict[str, Any]:
        return {
            "unit": self.unit,
            "a_s": self.a_s,
            "b_s": self.b_s,
            "c_s": self.c_s,
            "samples": self.samples,
            "worst_error": self.worst_error,
        }


def size(length: Length, unit: str) -> float:
    """The length a fit reads: tokens where counted and asked for, else characters."""
    return float(length.tokens if unit == "tokens" and length.tokens is not None else length.chars)


def fit_cost(measured: Sequence[tuple[Length, float]]) -> CostFit:
    """A + b·x + c·x² through (length, seconds) measured one at a time, as ⑤ fits its own reviews
    (`rising_curve`): a line, or the mean, where the data cannot carry more."""
    points = [(length, s) for length, s in measured if s > 0]
    if not points:
        raise ValueError("no review was measured: nothing to fit a cost on")
    unit = "tokens" if all(length.tokens is not None for length, _ in points) else "chars"
    x = np.array([size(length, unit) for length, _ in points])
    y = np.array([s for _, s in points])
    a, b, c = rising_curve(x.tolist(), y.tolist()) or (float(y.mean()), 0.0, 0.0)
    predicted = np.maximum(0.0, a + b * x + c * x * x)
    worst = float(np.max(np.abs(predicted - y) / y))
    return CostFit(unit, round(a, 6), round(b, 8), round(c, 10), len(points), round(worst, 3))


@dataclass(frozen=True)
class LaneCost:
    """The lane's cost of a review alone, as fitted, and what it gives over the mix offered."""

    fit: CostFit
    one_review_s: float  # the mean predicted cost over the mix offered
    measured_mean_s: float  # the plain mean of the reviews measured (what capacity was before issue 45)

    @property
    def capacity_per_s(self) -> float:
        """Reviews a second the lane serves one at a time, reviews drawn from the mix offered."""
        return 1.0 / self.one_review_s

    @classmethod
    def of(cls, measured: Sequence[tuple[Length, float]], offered: Sequence[Length]) -> "LaneCost":
        fit = fit_cost(measured)
        mean_s = statistics.mean(fit.seconds(x) for x in offered)
        return cls(fit, mean_s, statistics.mean(s for _, s in measured))


def served_work(
    offered: Sequence[Length],
    served: Sequence[Length],
    window_s: float,
    cost: LaneCost,
    straddling: Sequence[tuple[Length, float]] = (),
) -> dict[str, float | None]:
    """A run's work beside its count.

    `served_work`: the served reviews' one-at-a-time cost summed, over the window: the share of the lane's time
    its answers are worth (equal to served ÷ capacity when the served are the mix offered; lower when they are
    the short ones). `offered_work`: the same for every review offered, the load the lane was really offered.
    `served_work_reviews`: the served reviews' cost in reviews of the mix offered (a burst has no window).
    `served_work_straddling`: answers delivered after the window, each (length, the share of its inference
    inside the window): the work the window's end cut off. With 2,000-character reviews (about 11 s alone) one
    of them can be a sixth of a 60 s window; `served_work` + this is the window's work without that edge."""
    served_s = sum(cost.fit.seconds(x) for x in served)
    offered_s = sum(cost.fit.seconds(x) for x in offered)
    cut_s = sum(cost.fit.seconds(x) * share for x, share in straddling)
    offered_mean, served_mean = mean_length(offered), mean_length(served)
    return {
        "served_work": round(served_s / window_s, 3) if window_s > 0 else None,
        "served_work_straddling": round(cut_s / window_s, 3) if window_s > 0 else None,
        "offered_work": round(offered_s / window_s, 3) if window_s > 0 else None,
        "served_work_reviews": round(served_s / cost.one_review_s, 2),
        "offered_mean_chars": offered_mean["chars"],
        "offered_mean_tokens": offered_mean["tokens"],
        "served_mean_chars": served_mean["chars"],
        "served_mean_tokens": served_mean["tokens"],
    }


@dataclass(frozen=True)
class WorkMeter:
    """What a run's reviews were worth: their lengths, and their cost by the fit."""

    lengths: Lengths
    cost: LaneCost

    def row(
        self,
        offered: Sequence[str],
        served: Sequence[str],
        window_s: float,
        straddling: Sequence[tuple[str, float]] = (),
    ) -> dict[str, float | None]:
        cut = list(
            zip(self.lengths.of([text for text, _ in straddling]), (share for _, share in straddling), strict=True)
        )
        return served_work(self.lengths.of(offered), self.lengths.of(served), window_s, self.cost, cut)


def mixed(seed: int, shorts: int, longs: int, long_chars: int) -> list[str]:
    """`shorts` sample reviews and `longs` long ones spread evenly among them, made as a stream makes them
    (kit/load.py `TextSource`, tags included): a sample of a mix in exact proportions, the same for a seed."""
    source = TextSource(0, seed, long_chars=long_chars)
    short = iter([source.short() for _ in range(shorts)])
    long = iter([source.long() for _ in range(longs)])
    total = shorts + longs
    at = {int((k + 0.5) * total / longs) for k in range(longs)}
    return [next(long) if i in at else next(short) for i in range(total)]


def mix_sample(seed: int, long_share: float, long_chars: int, count: int = 2000) -> list[str]:
    """What a stream of this mix offers, in its exact proportions: the mix a capacity is the mean over."""
    longs = round(long_share * count)
    return mixed(seed, count - longs, longs, long_chars)


def inside(answer: Fate, window_s: float) -> float:
    """The share of an answer delivered after the window whose inference (Server-Timing) ran inside it; 0 for a
    server that does not say how long its inference took (a peer)."""
    if finished_at(answer) <= window_s or not answer.infer_ms:
        return 0.0
    infer_s = answer.infer_ms / 1000
    return max(0.0, min(1.0, (window_s - (finished_at(answer) - infer_s)) / infer_s))


def in_window(result: LoadResult) -> tuple[list[str], list[tuple[str, float]]]:
    """A stream's answers delivered within its sending window (the texts), and those after it whose inference ran
    partly inside it, each with that share: what `served_work` counts, the same for every server measured."""
    window_s = result.config.duration_s
    ok = [o for o in result.outcomes if o.category == "ok" and o.text is not None]
    within = [o.text for o in ok if o.text is not None and finished_at(o) <= window_s]
    straddling = [(o.text, share) for o in ok if o.text is not None and (share := inside(o, window_s)) > 0]
    return within, straddling
