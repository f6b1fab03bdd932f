"""The model answers each review of a batch as soon as its pairs are scored, and drops those nobody awaits."""

from typing import Any

import numpy as np

from app.engine.model import ONE_CALL, CallShape, RerankerModel, Shape, calls_shaped, load_topics, score_each
from app.settings import PROJECT_ROOT
from kit.live import TINY_MODEL
from tests.fakes import GatedScorer, fake_ranking

TOPICS = load_topics(PROJECT_ROOT / "app" / "data" / "topics.json")
LONG = "배송이 빠르고 포장이 꼼꼼해서 좋았어요. 색도 사진과 같고 마감도 깔끔합니다. 다음에도 살게요! " * 3
SHORT = "별로"


class CountingSession:
    """The real onnxruntime session, counting the pairs (rows) each call scores."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self.rows: list[int] = []

    def run(self, outputs: Any, feeds: dict[str, np.ndarray], options: Any = None) -> Any:
        self.rows.append(len(feeds["input_ids"]))
        return self._session.run(outputs, feeds, options)


def model(chunk: int = 4) -> tuple[RerankerModel, CountingSession]:
    m = RerankerModel(TINY_MODEL, TOPICS, call_shape=CallShape(Shape(chunk, True), Shape(chunk, True)))
    counting = CountingSession(m.session)
    m.session = counting
    return m, counting


def test_each_review_comes_once_with_the_ranking_score_gives() -> None:
    m, _ = model()
    texts = [LONG, SHORT, "가격 대비 괜찮음"]
    streamed = dict(m.score_each(texts))
    assert sorted(streamed) == [0, 1, 2]
    assert [streamed[i] for i in range(3)] == m.score(texts)


def test_sorted_across_a_batch_a_short_review_is_answered_first() -> None:
    m, counting = model()
    order: list[tuple[int, int]] = []  # (review, model calls made when it came out)
    for i, _ranking in m.score_each([LONG, SHORT]):
        order.append((i, len(counting.rows)))
    assert [i for i, _ in order] == [1, 0]
    assert order[0][1] < order[1][1]  # the short one came out while the long one still had calls to make


def test_a_review_nobody_awaits_costs_no_more_pairs() -> None:
    m, counting = model()
    gone: set[int] = set()
    answered: list[int] = []
    for i, _ranking in m.score_each([SHORT, LONG, LONG + "!"], lambda i: i not in gone):
        answered.append(i)
        gone.add(2)  # the third review's client hangs up once the first answer is out
    assert answered == [0, 1]
    assert sum(counting.rows) < 3 * len(TOPICS)


def test_a_scorer_that_cannot_stream_answers_all_at_the_end() -> None:
    plain = GatedScorer(gated=False)  # a test fake: `score` only
    assert list(score_each(plain, ["가", "나"], lambda i: False)) == [(0, fake_ranking("가")), (1, fake_ranking("나"))]


def test_inside_calls_shaped_one_call_carries_every_pair_of_the_review() -> None:
    m, counting = model(chunk=8)
    m.score([LONG])
    assert counting.rows == [8, 8, 8]  # the served shape: 24 pairs in sorted 8-pair calls
    counting.rows.clear()
    with calls_shaped(ONE_CALL):
        m.score([LONG])
    assert counting.rows == [len(TOPICS)]  # the student's call: all 24 pairs at once
    counting.rows.clear()
    m.score([LONG])
    assert counting.rows == [8, 8, 8]  # the override ends with its block
