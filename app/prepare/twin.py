"""Random-weight checkpoints with bge-reranker-base's architecture, for when the hub is out of reach."""

import logging
from pathlib import Path

import torch
from transformers import XLMRobertaConfig, XLMRobertaForSequenceClassification

log = logging.getLogger(__name__)


def base_config(vocab_size: int = 250002) -> XLMRobertaConfig:
    """bge-reranker-base's config.json: XLM-RoBERTa base with a one-logit head."""
    return XLMRobertaConfig(  # type: ignore[no-untyped-call,unused-ignore]
        vocab_size=vocab_size,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        max_position_embeddings=514,
        type_vocab_size=1,
        layer_norm_eps=1e-5,
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
        num_labels=1,
        architectures=["XLMRobertaForSequenceClassification"],
    )


def tiny_config(vocab_size: int) -> XLMRobertaConfig:
    """The same family cut down to a few hundred kilobytes, so tests need no real model."""
    config = base_config(vocab_size)
    config.hidden_size = 64
    config.num_hidden_layers = 2
    config.num_attention_heads = 4
    config.intermediate_size = 128
    return config


def save_random_checkpoint(config: XLMRobertaConfig, folder: Path, *, seed: int) -> None:
    """Seeded random weights saved like a hub snapshot, so export treats it as one."""
    torch.manual_seed(seed)
    model = XLMRobertaForSequenceClassification(config).eval()  # type: ignore[no-untyped-call,unused-ignore]
    params = sum(p.numel() for p in model.parameters())
    log.info("random checkpoint: %.1fM parameters (seed %d)", params / 1e6, seed)
    model.save_pretrained(folder)
