"""The text rule: a review holds a visible character (a letter, number, punctuation mark or symbol) and no
control but tab, newline and carriage return. A text with nothing to read costs the box a whole inference and
teaches nothing, so each refused text below must stop at a 422 before the model."""

import re

import pytest

from app.contract.schema import VISIBLE_PATTERN, check_text
from app.errors import InvalidReview
from tests.api.test_hardening import POSTS
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer

NOTHING_VISIBLE = [
    "\u0301" * 3,  # combining acute accents with nothing to sit on
    "\u0e48\u0e49",  # Thai tone marks
    "\u20dd",  # combining enclosing circle
    "\ufe0f\u20e3",  # a keycap with no key
    " \u0300\u200b ",
    "\ue000",  # private use
    "\U000f0000",  # private use, plane 15
    "\U0010fffd",  # private use, plane 16
    "\ufdd0",  # noncharacter
    "\uffff",  # noncharacter
    "\U0001fffe",  # noncharacter beyond the BMP
    "\u0378",  # unassigned
    "\U000e0080",  # unassigned beyond the BMP
    "\ufffc",  # object replacement character: a stand-in for something not there
    "\ufffd\ufffd",  # replacement characters: bytes that could not be decoded
    "\U00013430\U00013431\U00013436",  # Egyptian hieroglyph format controls
    "\u3164\u115f",  # Hangul fillers (letters, but default-ignorable)
    "\u2800\u2800",  # braille blank
]
CONTROLS = ["a\u0000b", "빵\x7f", "\x85맛있어요", "좋아요\x1b[31m", "\x0c가격", "리뷰\x9f", "\x00"]
ORDINARY = [
    "빵은 맛있는데 줄이 너무 길어요.",
    "👍👍",
    "12345",
    "!!!",
    "ㅋㅋㅋ",
    "€",
    "🇰🇷",
    "1\ufe0f\u20e3",  # keycap one
    "가\u0301",
    "x\ufffd",  # a visible letter beside a replacement character
    "첫 줄\n둘째 줄\r\n\t셋째 줄",
    "\u200b빵\u200b",
]


@pytest.mark.parametrize("text", NOTHING_VISIBLE)
async def test_text_with_no_visible_character_never_reaches_the_model(lab_client: LabClientFactory, text: str) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        responses = [await client.post(url, json={"text": text}) for url in POSTS]
    assert [r.status_code for r in responses] == [422] * 4, [r.text for r in responses]
    body = responses[0].json()
    assert set(body) == {"error", "detail"} and body["error"] == "invalid_review"
    assert "no visible character" in body["detail"] and body["detail"].isascii()
    assert scorer.calls == []


@pytest.mark.parametrize("text", CONTROLS)
async def test_a_control_character_anywhere_is_refused(lab_client: LabClientFactory, text: str) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        responses = [await client.post(url, json={"text": text}) for url in POSTS]
    assert [r.status_code for r in responses] == [422] * 4
    control = next(c for c in text if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)
    detail = responses[0].json()["detail"]
    assert f"control character U+{ord(control):04X} at character {text.index(control)}" in detail
    assert scorer.calls == []


@pytest.mark.parametrize("text", ORDINARY)
async def test_ordinary_reviews_emoji_and_digits_still_pass(lab_client: LabClientFactory, text: str) -> None:
    scorer = GatedScorer(gated=False)
    async with lab_client(scorer) as client:
        responses = [await client.post(url, json={"text": text}) for url in POSTS]
    assert [r.status_code for r in responses] == [200, 200, 200, 202], [r.text for r in responses]


@pytest.mark.parametrize("text", [*NOTHING_VISIBLE, *CONTROLS, *ORDINARY])
def test_the_documented_pattern_agrees_within_the_bmp(text: str) -> None:
    """Python's `re` (and an ECMA-262 validator: the pattern uses only `\\u` ranges) reads the pattern the way the
    server rules; beyond the BMP a validator sees surrogate pairs, so there the server alone decides."""
    if all(ord(c) < 0x10000 for c in text):
        refused = text in NOTHING_VISIBLE or text in CONTROLS
        assert (re.search(VISIBLE_PATTERN, text) is None) == refused


def test_the_documented_pattern_and_the_server_agree_on_every_bmp_character() -> None:
    def served(text: str) -> bool:
        try:
            check_text(text, 100)
        except InvalidReview:
            return False
        return True

    pattern = re.compile(VISIBLE_PATTERN)
    differ = [
        text
        for code in range(0x10000)
        if not 0xD800 <= code <= 0xDFFF
        for text in (chr(code), f" {chr(code)}\u200b", f"\u0301{chr(code)}\t", f"a{chr(code)}")
        if (pattern.search(text) is not None) != served(text)
    ]
    assert differ == []


@pytest.mark.parametrize("astral", ["👍👍", "가👍", "\U000e0041", "\U000f0000"])
def test_to_a_validator_reading_utf_16_characters_beyond_the_bmp_are_visible(astral: str) -> None:
    """A JSON Schema validator without the `u` flag sees surrogate pairs: no range of the pattern covers them."""
    as_units = "".join(
        chr(0xD800 + ((ord(c) - 0x10000) >> 10)) + chr(0xDC00 + ((ord(c) - 0x10000) & 0x3FF)) if ord(c) > 0xFFFF else c
        for c in astral
    )
    assert len(as_units) > len(astral) and re.search(VISIBLE_PATTERN, as_units) is not None
