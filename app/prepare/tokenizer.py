"""Trains the offline twin's tokenizer: an XLM-R-shaped Unigram model fitted to Korean text."""

import json
import logging
from collections.abc import Iterator
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import XLMRobertaTokenizerFast

from app.prepare import PrepareError
from app.settings import PROJECT_ROOT

log = logging.getLogger(__name__)

CORPUS = PROJECT_ROOT / "app" / "prepare" / "corpus_ko.txt"
REVIEWS = PROJECT_ROOT / "app" / "data" / "sample_reviews.json"
TOPICS = PROJECT_ROOT / "app" / "data" / "topics.json"

# XLM-R's ids for these are 0..3, and the server and model config rely on <pad> = 1.
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
# An upper bound only: Unigram drops pieces the corpus never needs, so ~2,400 Korean lines
# settle near 2,000 tokens, splitting reviews about as finely as XLM-R does (1.3-2 chars a token).
VOCAB_SIZE = 8000
DESCRIPTION = "Unigram trained on app/prepare/corpus_ko.txt + sample reviews + topic queries"
# XLM-R's published vocabulary: 250,002 SentencePiece pieces for 100 languages (<mask> is the last).
XLMR_PIECES = 250_002
XLMR_DESCRIPTION = "; other languages' pieces from wordfreq up to XLM-R's 250,002"


def training_lines() -> Iterator[str]:
    """Corpus sentences, then the sample reviews and topic queries the lab actually sends."""
    if not CORPUS.exists():
        raise PrepareError(f"the tokenizer corpus {CORPUS} is missing: the twin's tokenizer is trained on it.")
    yield from (line.strip() for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())
    yield from (item["text"] for item in json.loads(REVIEWS.read_text(encoding="utf-8")))
    yield from (item["query"] for item in json.loads(TOPICS.read_text(encoding="utf-8")))


def train_tokenizer(vocab_size: int = VOCAB_SIZE, *, pieces: int | None = None) -> Tokenizer:
    """Unigram + Metaspace + NFKC like XLM-R's SentencePiece, with its special ids and pair format.

    `pieces` (the twin: XLM-R's 250,002) fills the vocabulary up with other languages' words
    (app/prepare/vocabulary.py): Korean text splits as trained, and the tokenizer holds in memory
    what one with the real vocabulary holds."""
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        unk_token="<unk>",
        show_progress=False,
    )
    tokenizer.train_from_iterator(training_lines(), trainer)
    tokenizer.model = _settled(tokenizer)
    if pieces is not None:
        from app.prepare.vocabulary import fill_up  # wordfreq: only the twin needs it

        tokenizer.model = fill_up(tokenizer, pieces - 1, keep=list(training_lines()))
    # XLM-R keeps <mask> as its very last id; adding it after training does the same.
    tokenizer.add_special_tokens(["<mask>"])
    bos, eos = tokenizer.token_to_id("<s>"), tokenizer.token_to_id("</s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>",
        pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", bos), ("</s>", eos)],
    )
    log.info("trained tokenizer: %d tokens", tokenizer.get_vocab_size())
    return tokenizer


def _settled(tokenizer: Tokenizer) -> models.Unigram:
    """The trained model with scores made reproducible, so the committed tiny model is too.

    Training differs from run to run in two ways: float sums round differently in the
    last digits, and the characters the trainer had pruned come back with scores 1e-4
    apart in hash-set order. Rounding, one score for those characters and sorting ties
    by piece remove both without changing how text is split.
    """
    trained = json.loads(tokenizer.to_str())["model"]
    specials = len(SPECIALS)
    vocab = [(piece, round(score, 8)) for piece, score in trained["vocab"]]
    start = len(vocab) - 1
    while start > specials and vocab[start - 1][1] - vocab[start][1] < 1.5e-4:
        start -= 1
    floor = vocab[-1][1]
    pieces = vocab[specials:start] + [(piece, floor) for piece, _ in vocab[start:]]
    pieces.sort(key=lambda item: (-item[1], item[0]))
    return models.Unigram(vocab[:specials] + pieces, unk_id=trained["unk_id"], byte_fallback=False)


def save_tokenizer(tokenizer: Tokenizer, folder: Path) -> None:
    """Wraps it as XLM-R's fast tokenizer so transformers and optimum load it like the real one."""
    XLMRobertaTokenizerFast(  # type: ignore[no-untyped-call,unused-ignore]
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=512,
    ).save_pretrained(folder)
