"""The cross-encoder: scores reviews against the topics with onnxruntime and tokenizers only."""

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer


@dataclass(frozen=True, slots=True)
class Topic:
    id: str
    label: str
    query: str


@dataclass(frozen=True, slots=True)
class TopicScore:
    id: str
    label: str
    score: float


Ranking = list[TopicScore]


@dataclass(frozen=True, slots=True)
class Shape:
    """How a batch's (topic, review) pairs go into onnxruntime calls: `chunk` pairs per call
    (0: the whole batch in one call), sorted by token length across the batch or in arrival order."""

    chunk: int
    sort: bool

    @property
    def label(self) -> str:
        if self.chunk == 0:
            return "whole batch, " + ("sorted" if self.sort else "in order")
        return f"{self.chunk} pairs, " + ("sorted" if self.sort else "in order")


@dataclass(frozen=True, slots=True)
class CallShape:
    """The shape for one review and the shape for a batch of several (app/engine/callshape.py picks them)."""

    single: Shape
    batch: Shape

    @classmethod
    def fixed(cls, chunk: int) -> "CallShape":
        """`LAB_PAIR_CHUNK`'s meaning: sorted chunks of `chunk` pairs, or 0 for the whole batch padded."""
        shape = Shape(chunk, sort=chunk > 0)
        return cls(shape, shape)

    def for_reviews(self, n: int) -> Shape:
        return self.single if n == 1 else self.batch


# One call with every pair of the review, padded to its longest: what `tokenizer(..., padding=True)` and one
# `model(**pairs)` do in the server a student writes first. Path ① calls the model this way (app/paths/naive.py).
ONE_CALL = Shape(0, sort=False)
_own_shape: ContextVar[Shape | None] = ContextVar("own_shape", default=None)


@contextmanager
def calls_shaped(shape: Shape) -> Iterator[None]:
    """Model calls made inside (on this thread or task) use `shape`, whatever the served call shape is."""
    token = _own_shape.set(shape)
    try:
        yield
    finally:
        _own_shape.reset(token)


class Scorer(Protocol):
    """What the lane needs from a model: one ranking per review, in order."""

    def score(self, texts: Sequence[str]) -> list[Ranking]: ...


TokenCount = Callable[[str], int]  # one review's tokens in its (topic, review) pair


@runtime_checkable
class CountsTokens(Protocol):
    def count_tokens(self, text: str) -> int: ...


@runtime_checkable
class Wraps(Protocol):
    """A scorer around another (the box's burning, its meter): `inner` is the one it runs."""

    @property
    def inner(self) -> Scorer: ...


def token_counter(scorer: Scorer) -> TokenCount | None:
    """The model's own tokenizer under any wrappers: what a review costs is its tokens, as the lane runs them
    (truncation included). None for a scorer without one (a test's fake): callers fall back to characters."""
    seen: object = scorer
    for _ in range(8):  # wrappers are one or two deep; a cycle must not hang the start
        if isinstance(seen, CountsTokens):
            return seen.count_tokens
        if not isinstance(seen, Wraps):
            return None
        seen = seen.inner
    return None


def in_order(scored: Iterable[tuple[int, Ranking]], count: int) -> list[Ranking]:
    """A stream of (index, ranking), every index present, as the list `score` returns."""
    rankings: list[Ranking | None] = [None] * count
    for i, ranking in scored:
        rankings[i] = ranking
    if any(r is None for r in rankings):
        raise RuntimeError("a review was left unscored")
    return [r for r in rankings if r is not None]


Wanted = Callable[[int], bool]  # is review i of this call still awaited? (asked before each model call)


def score_each(scorer: Scorer, texts: Sequence[str], wanted: Wanted | None = None) -> Iterator[tuple[int, Ranking]]:
    """(index, ranking) for each review as soon as it is scored, leaving out reviews nobody awaits any more.

    A scorer with its own `score_each` (RerankerModel, the box's wrappers) streams: a batch's
    first finished review is answered while the others still run, and a review whose client left
    stops costing pairs at the next model call. Any other scorer (a test's fake) answers at the end.
    """
    each: Callable[[Sequence[str], Wanted | None], Iterator[tuple[int, Ranking]]] | None
    each = getattr(scorer, "score_each", None)
    if each is not None:
        yield from each(texts, wanted)
        return
    yield from enumerate(scorer.score(texts))


def load_topics(path: Path) -> list[Topic]:
    return [Topic(**item) for item in json.loads(path.read_text(encoding="utf-8"))]


def load_manifest(model_dir: Path) -> dict[str, Any]:
    manifest_path = model_dir / "manifest.json"
    if not manifest_path.exists():
        return {"name": model_dir.name, "weights": "unknown"}
    manifest: dict[str, Any] = json.loads(manifest_path.read_text(encoding="utf-8"))
    return manifest


class RerankerModel:
    """bge-reranker-style cross-encoder over (topic, review) pairs.

    A batch of N reviews becomes N x len(topics) pairs, run in chunks padded only to their own
    longest pair; sorted by token length, one long review does not make every short pair in its
    batch pay for padding. How many pairs per call is `call_shape` (docs/model.md, "Call shape").
    """

    def __init__(
        self,
        model_dir: Path,
        topics: Sequence[Topic],
        *,
        intra_op_threads: int = 1,
        max_tokens: int = 512,
        chunk_pairs: int = 24,
        call_shape: CallShape | None = None,
        memory: str = "arena",
    ) -> None:
        if not (model_dir / "model.onnx").exists():
            raise FileNotFoundError(f"no model.onnx in {model_dir}; run `just model` first")
        self.model_dir = model_dir
        self.topics = list(topics)
        self.call_shape = call_shape or CallShape.fixed(chunk_pairs)
        self.manifest = load_manifest(model_dir)

        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # How onnxruntime keeps activation memory between calls (docs/box.md, "Memory given back"):
        # arena (kept for the next call), shrink (the arena returns what a call grew), no_arena (malloc).
        options.enable_cpu_mem_arena = memory != "no_arena"
        self._run_options = ort.RunOptions()
        if memory == "shrink":
            self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        self.session = ort.InferenceSession(str(model_dir / "model.onnx"), options, providers=["CPUExecutionProvider"])
        self._input_names = {i.name for i in self.session.get_inputs()}

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=max_tokens, strategy="only_second")
        pad_id = self.tokenizer.token_to_id("<pad>")
        self._pad_id = 1 if pad_id is None else pad_id

    def count_tokens(self, text: str) -> int:
        """Tokens of one (first topic, review) pair: what the lane pays for per pair."""
        return len(self.tokenizer.encode(self.topics[0].query, text).ids)

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        return in_order(self.score_each(texts), len(texts))

    def score_each(self, texts: Sequence[str], wanted: Wanted | None = None) -> Iterator[tuple[int, Ranking]]:
        """Each review's ranking once its last pair is scored, in the order the call shape finishes them.

        Sorted across a batch, a short review's pairs come first, so it is answered first; before each
        model call the pairs of reviews `wanted` gives up on are left out (their client has gone)."""
        n = len(self.topics)
        pairs = [(topic.query, text) for text in texts for topic in self.topics]
        encodings = self.tokenizer.encode_batch(pairs)
        lengths = [len(e.ids) for e in encodings]
        shape = _own_shape.get() or self.call_shape.for_reviews(len(texts))
        size = shape.chunk or len(pairs)  # 0: the whole batch padded to its longest pair
        order = sorted(range(len(pairs)), key=lengths.__getitem__) if shape.sort else list(range(len(pairs)))
        logits = np.empty(len(pairs), dtype=np.float32)
        left = [n] * len(texts)  # pairs of each review not scored yet
        dropped: set[int] = set()
        next_pair = 0
        while next_pair < len(order):
            chunk: list[int] = []
            while next_pair < len(order) and len(chunk) < size:
                i = order[next_pair]
                next_pair += 1
                if i // n in dropped:
                    continue
                if wanted is not None and not wanted(i // n):
                    dropped.add(i // n)
                    continue
                chunk.append(i)
            if not chunk:
                return
            width = max(lengths[i] for i in chunk)
            ids = np.full((len(chunk), width), self._pad_id, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, : lengths[i]] = encodings[i].ids
                mask[row, : lengths[i]] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)
            (out,) = self.session.run(["logits"], feeds, self._run_options)
            logits[chunk] = out.reshape(-1)
            for k in (i // n for i in chunk):
                left[k] -= 1
                if left[k] == 0:
                    yield k, self._rank(logits[k * n : (k + 1) * n])

    def _rank(self, logits: np.ndarray) -> Ranking:
        scored = [
            TopicScore(t.id, t.label, round(1.0 / (1.0 + math.exp(-float(x))), 6))
            for t, x in zip(self.topics, logits, strict=True)
        ]
        return sorted(scored, key=lambda s: s.score, reverse=True)
