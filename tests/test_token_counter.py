"""What a review costs on the lane is its tokens: the model's tokenizer is found under the box's wrappers."""

from app.engine.model import token_counter
from app.inside.burn import BurningScorer
from tests.fakes import GatedScorer


class Counting(GatedScorer):
    def count_tokens(self, text: str) -> int:
        return len(text.split())


def test_the_tokenizer_is_found_under_the_boxs_wrappers_and_absent_from_a_fake() -> None:
    counter = token_counter(BurningScorer(Counting(gated=False), 0.0))
    assert counter is not None and counter("세 단어 리뷰") == 3
    assert token_counter(BurningScorer(GatedScorer(gated=False), 0.0)) is None
