"""The peer benchmark gives both servers the same work: same reviews, in the same order."""

from app.bench.load import TextSource
from app.bench.peer import scenarios


def test_a_seed_gives_the_same_reviews_in_the_same_order() -> None:
    first, second = TextSource(0, seed=7), TextSource(0, seed=7)
    texts = [first.next() for _ in range(50)]
    assert texts == [second.next() for _ in range(50)]
    assert len(set(texts)) == 50  # still unique, so the lab's cache never answers


def test_another_seed_gives_other_reviews() -> None:
    one, two = TextSource(0, seed=1), TextSource(0, seed=2)
    assert [one.next() for _ in range(12)] != [two.next() for _ in range(12)]


def test_every_peer_scenario_carries_the_seed() -> None:
    plans = scenarios(capacity=1.0, duration_s=60.0, seed=5)
    assert set(plans) >= {"burst 12", "burst 50"}
    assert {config.seed for config in plans.values()} == {5}
