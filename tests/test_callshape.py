"""The call shape: the fastest measured shape is served, cached per host and model, overridden by LAB_PAIR_CHUNK."""

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from app.engine.callshape import BATCH, CANDIDATES, ONE, time_shapes, workloads
from app.engine.callshape_cache import host_key, read_cache, settle_call_shape
from app.engine.model import CallShape, Ranking, RerankerModel, Shape, load_topics
from app.settings import PROJECT_ROOT
from kit.live import TINY_MODEL

SAMPLES = [f"리뷰 {'가' * n}" for n in range(1, 21)]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TimedFake:
    """Advances a fake clock by a cost per review for each (workload, shape): no model, no sleeping."""

    def __init__(self, clock: FakeClock, cost: dict[tuple[str, Shape], float], slow_once: Shape | None = None) -> None:
        self.call_shape = CallShape.fixed(24)
        self.clock, self.cost, self.slow_once = clock, cost, slow_once
        self.calls = 0

    def score(self, texts: Sequence[str]) -> list[Ranking]:
        self.calls += 1
        shape = self.call_shape.for_reviews(len(texts))
        workload = ONE if len(texts) == 1 else BATCH
        seconds = self.cost.get((workload, shape), 1.0) * len(texts)
        if shape == self.slow_once:  # a slow moment on a shared host, once
            seconds *= 1.2
            self.slow_once = None
        self.clock.now += seconds
        return [[] for _ in texts]


def costs(one_best: Shape, batch_best: Shape) -> dict[tuple[str, Shape], float]:
    """Every shape costs 1 s per review but one per workload; the other workload's winner costs 0.9 here."""
    cost = {(w, s): 1.0 for w, shapes in CANDIDATES.items() for s in shapes}
    cost[(ONE, batch_best)] = cost[(BATCH, one_best)] = 0.9
    cost[(ONE, one_best)], cost[(BATCH, batch_best)] = 0.8, 0.7
    return cost


def key_for(cpu: str) -> dict[str, object]:
    return {"cpu": cpu, "model_sha256": "a" * 64, "threads": 1}


def test_chooser_serves_the_fastest_shape_for_one_review_and_for_a_batch() -> None:
    clock = FakeClock()
    fake = TimedFake(clock, costs(Shape(8, True), Shape(12, True)))
    choice = settle_call_shape(fake, SAMPLES, key=lambda: key_for("cpu"), cache_file=None, clock=clock)
    assert choice.source == "measured"
    assert choice.shape == CallShape(single=Shape(8, True), batch=Shape(12, True))
    assert fake.call_shape == choice.shape
    timed = {(t.workload, t.chunk, t.sort): t.seconds_per_review for t in choice.trials}
    assert timed[(ONE, 8, True)] == pytest.approx(0.8)
    assert timed[(BATCH, 12, True)] == pytest.approx(0.7)
    assert len(choice.trials) == len(CANDIDATES[ONE]) + len(CANDIDATES[BATCH])


def test_a_slow_moment_does_not_lose_the_fastest_shape() -> None:
    clock = FakeClock()
    winner = Shape(4, True)
    fake = TimedFake(clock, costs(winner, Shape(8, False)), slow_once=winner)
    trials = time_shapes(fake, workloads(SAMPLES), clock=clock)
    best = min((t for t in trials if t.workload == ONE), key=lambda t: t.seconds_per_review)
    assert (best.chunk, best.sort) == (4, True)
    assert best.seconds_per_review == pytest.approx(0.8)  # its second run, not the slow first one


def test_cache_is_reused_for_the_same_host_and_model_and_measured_again_when_either_changes(tmp_path: Path) -> None:
    cache = tmp_path / "call-shape.json"
    clock = FakeClock()
    fake = TimedFake(clock, costs(Shape(12, True), Shape(24, True)))
    first = settle_call_shape(fake, SAMPLES, key=lambda: key_for("cpu A"), cache_file=cache, clock=clock)
    assert first.source == "measured" and cache.exists()

    fake.calls = 0
    again = settle_call_shape(fake, SAMPLES, key=lambda: key_for("cpu A"), cache_file=cache, clock=clock)
    assert (again.source, again.shape, fake.calls) == ("cached", first.shape, 0)

    fake.cost = costs(Shape(4, True), Shape(8, False))  # another CPU, another winner
    moved = settle_call_shape(fake, SAMPLES, key=lambda: key_for("cpu B"), cache_file=cache, clock=clock)
    assert moved.source == "measured" and fake.calls > 0
    assert moved.shape == CallShape(Shape(4, True), Shape(8, False))
    assert json.loads(cache.read_text(encoding="utf-8"))["key"]["cpu"] == "cpu B"
    assert read_cache(cache, key_for("cpu A")) is None


def test_the_key_changes_with_the_model_file_and_the_cpu(tmp_path: Path) -> None:
    model = tmp_path / "model.onnx"
    model.write_bytes(b"one model")
    before = host_key(model, 1, cpu="AMD EPYC")
    assert host_key(model, 1, cpu="AMD EPYC") == before
    assert host_key(model, 1, cpu="Intel Xeon") != before
    assert host_key(model, 2, cpu="AMD EPYC") != before
    model.write_bytes(b"another model")
    assert host_key(model, 1, cpu="AMD EPYC")["model_sha256"] != before["model_sha256"]


def test_lab_pair_chunk_overrides_cache_and_measurement(tmp_path: Path) -> None:
    cache = tmp_path / "call-shape.json"
    clock = FakeClock()
    fake = TimedFake(clock, costs(Shape(8, True), Shape(8, True)))
    settle_call_shape(fake, SAMPLES, key=lambda: key_for("cpu"), cache_file=cache, clock=clock)
    fake.calls = 0

    def no_key() -> dict[str, object]:
        raise AssertionError("an override must not hash the model")

    choice = settle_call_shape(fake, SAMPLES, key=no_key, cache_file=cache, override=24, clock=clock)
    assert (choice.source, fake.calls) == ("LAB_PAIR_CHUNK", 0)
    assert fake.call_shape == CallShape.fixed(24) == CallShape(Shape(24, True), Shape(24, True))
    assert settle_call_shape(fake, SAMPLES, key=no_key, cache_file=None, override=0).shape.batch == Shape(0, False)


def test_a_corrupt_cache_is_measured_again(tmp_path: Path) -> None:
    cache = tmp_path / "call-shape.json"
    cache.write_text("{not json", encoding="utf-8")
    clock = FakeClock()
    fake = TimedFake(clock, costs(Shape(8, True), Shape(12, True)))
    assert (
        settle_call_shape(fake, SAMPLES, key=lambda: key_for("c"), cache_file=cache, clock=clock).source == "measured"
    )
    assert read_cache(cache, key_for("c")) is not None


@pytest.mark.parametrize(
    "shape", sorted({s for shapes in CANDIDATES.values() for s in shapes} | {Shape(0, False)}, key=str)
)
def test_every_shape_scores_every_review_against_every_topic(shape: Shape) -> None:
    """Chunking and sorting only regroup the pairs: each review keeps its own scores."""
    topics = load_topics(PROJECT_ROOT / "app" / "data" / "topics.json")
    model = RerankerModel(TINY_MODEL, topics, call_shape=CallShape.fixed(24))
    texts = ["짧은 리뷰", "배송이 빠르고 포장이 꼼꼼해서 좋았어요. 다음에도 살게요!", "가격 대비 괜찮음", "별로"]
    reference = {r: {s.id: s.score for s in ranking} for r, ranking in zip(texts, model.score(texts), strict=True)}
    model.call_shape = CallShape(shape, shape)
    for text, ranking in zip(texts, model.score(texts), strict=True):
        assert [s.score for s in ranking] == sorted((s.score for s in ranking), reverse=True)
        scores = {s.id: s.score for s in ranking}
        assert scores.keys() == {t.id for t in topics}
        # Dynamic int8 quantizes each call's activations with one scale, so neighbours move a score a little.
        assert all(abs(scores[k] - reference[text][k]) < 0.02 for k in scores)
