"""Fills the twin's Korean vocabulary up to XLM-R's size with other languages' frequent words.

bge-reranker-base's tokenizer is XLM-R's: a SentencePiece unigram of 250,002 pieces for 100
languages. A Korean review uses a few thousand of them, but the server holds all of them: the
`tokenizers` library builds a byte trie over every piece, which costs hundreds of MiB. A twin
with only its ~1,900 Korean pieces would leave that memory out of the box (docs/model.md,
"The tokenizer's vocabulary"). XLM-R's own pieces cannot be had offline, so the rest is built by
its published rule: every language gets a share of the vocabulary proportional to its data to
the power 0.3 (here: the length of its word list in wordfreq), filled with its most frequent
words as word-initial pieces (`▁word`) and word endings as continuation pieces.

No Korean text may split differently: pieces with Hangul or without a letter are never added, nor
any piece found in the text the tokenizer was trained on (its Latin loanwords: "latte", "flat
white"), so those lines split exactly as before; `fill_up` checks it.
"""

import json
import logging
from collections.abc import Iterator, Sequence

import regex
import wordfreq
from tokenizers import Tokenizer, models

log = logging.getLogger(__name__)

ALPHA = 0.3  # XLM-R's language sampling exponent (Conneau et al., 2020)
HANGUL = regex.compile(r"[\p{Script=Hangul}]")
LETTER = regex.compile(r"\p{L}")
LIST_SIZE = 400_000  # words read per language at most


def candidates(language: str, rank_offset: float) -> Iterator[tuple[str, float]]:
    """A language's pieces in order of frequency: `▁word`, then the word's second half (longer words)."""
    for rank, word in enumerate(wordfreq.top_n_list(language, LIST_SIZE, wordlist="best")):
        if HANGUL.search(word) or not LETTER.search(word):
            continue
        score = rank_offset - 0.5 * float(rank + 1) ** 0.25
        yield f"▁{word}", score
        if len(word) > 3:
            yield word[len(word) // 2 :], score - 1.0


def other_pieces(count: int, taken: set[str]) -> list[tuple[str, float]]:
    """`count` pieces from every wordfreq language but Korean, each language's share ∝ its list size^0.3."""
    languages = sorted(lang for lang in wordfreq.available_languages() if lang != "ko")
    sizes = {lang: len(wordfreq.top_n_list(lang, LIST_SIZE, wordlist="best")) for lang in languages}
    weights = {lang: size**ALPHA for lang, size in sizes.items()}
    total = sum(weights.values())
    pieces: list[tuple[str, float]] = []
    for lang in languages:
        quota = round(count * weights[lang] / total) + 1
        for piece, score in candidates(lang, rank_offset=-14.0):
            if quota == 0:
                break
            if piece not in taken:
                taken.add(piece)
                pieces.append((piece, score))
                quota -= 1
    return pieces[:count]


def fill_up(tokenizer: Tokenizer, size: int, keep: Sequence[str]) -> models.Unigram:
    """The tokenizer's Unigram with other languages' pieces added up to `size`; `keep` splits as before."""
    trained = json.loads(tokenizer.to_str())["model"]
    vocab: list[tuple[str, float]] = [(piece, score) for piece, score in trained["vocab"]]
    before = [tokenizer.encode(line).tokens for line in keep]
    taken = {piece for piece, _ in vocab} | substrings(keep)
    added = other_pieces(size - len(vocab), taken)
    tokenizer.model = models.Unigram(vocab + added, unk_id=trained["unk_id"], byte_fallback=False)
    if [tokenizer.encode(line).tokens for line in keep] != before:
        raise RuntimeError("the filled-up vocabulary splits Korean text differently")
    log.info("vocabulary filled up to %d pieces (%d from other languages)", len(vocab) + len(added), len(added))
    return tokenizer.model


def substrings(lines: Sequence[str]) -> set[str]:
    """Every substring of every word of `lines` as the Metaspace pre-tokenizer sees them (`▁word`):
    a piece among them could change how a line splits, so it is never added."""
    words = {"▁" + word for line in lines for word in line.split()}
    return {word[i:j] for word in words for i in range(len(word)) for j in range(i + 1, len(word) + 1)}
