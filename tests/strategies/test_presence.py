"""Who is in the room: keys seen lately, forgotten after the window, bounded against made-up keys."""

from app.engine.model import token_counter
from app.inside.burn import BurningScorer
from app.paths.presence import Presence
from tests.fakes import GatedScorer
from tests.strategies.test_holds import Clock


def test_a_student_is_present_within_the_window_and_forgotten_after() -> None:
    clock = Clock()
    presence = Presence(window_s=300, now=clock)
    presence.seen("a")
    clock.now += 200
    presence.seen("b")
    assert presence.present() == {"a", "b"}
    clock.now += 150  # a last seen 350 s ago, b 150 s ago
    assert presence.present() == {"b"}
    presence.seen("a")  # back: present again
    assert presence.present() == {"a", "b"}


def test_made_up_keys_cannot_grow_it_past_its_bound() -> None:
    presence = Presence(max_students=3, now=Clock())
    for key in "abcdef":
        presence.seen(key)
    assert presence.present() == {"d", "e", "f"}


class Counting(GatedScorer):
    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_the_tokenizer_is_found_under_the_boxs_wrappers_and_absent_from_a_fake() -> None:
    counter = token_counter(BurningScorer(Counting(gated=False), 0.0))
    assert counter is not None and counter("세 단어 리뷰") == 3
    assert token_counter(BurningScorer(GatedScorer(gated=False), 0.0)) is None
