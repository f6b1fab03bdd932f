"""The server a student writes first, as the seed's box ran it: optimum, transformers and torch, one call a review.

Never imported by the lab. `python -m bench.cliff` runs it under the box's memory cap beside the lab,
to measure where the seed's box spent its memory (what its libraries hold at rest, what one concurrent
request adds) instead of guessing it (docs/box.md, "① at the cliff"). It needs the `model` extra
(`pip install -e '.[model]'`), which is what the seed's package list named.

`LAB_SEED_MODEL_DIR` must hold config.json, model.onnx and the tokenizer files, as
`ORTModelForSequenceClassification.from_pretrained` expects (bench/cliff.py prepares one from the twin).
"""

import json
import os
from pathlib import Path

import torch
from fastapi import FastAPI
from optimum.onnxruntime import ORTModelForSequenceClassification
from pydantic import BaseModel
from transformers import AutoTokenizer

MODEL_DIR = os.environ["LAB_SEED_MODEL_DIR"]
TOPICS = json.loads((Path(__file__).resolve().parents[1] / "app" / "data" / "topics.json").read_text(encoding="utf-8"))
QUERIES = [topic["query"] for topic in TOPICS]

tokenizer = AutoTokenizer.from_pretrained(MODEL_DIR)  # type: ignore[no-untyped-call,unused-ignore]
model = ORTModelForSequenceClassification.from_pretrained(MODEL_DIR, provider="CPUExecutionProvider")
app = FastAPI()


class Review(BaseModel):
    text: str


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok"}


@app.post("/api/naive/predict")
def predict(review: Review) -> dict[str, list[dict[str, object]]]:
    """A plain `def`: FastAPI runs it on its thread pool, so every request infers at once (①)."""
    pairs = tokenizer(
        QUERIES, [review.text] * len(QUERIES), padding=True, truncation=True, max_length=512, return_tensors="pt"
    )
    with torch.inference_mode():
        logits = model(**pairs).logits.squeeze(-1)
    scores = torch.sigmoid(logits).tolist()
    ranked = sorted(zip(TOPICS, scores, strict=True), key=lambda pair: pair[1], reverse=True)
    return {"topics": [{"id": t["id"], "label": t["label"], "score": round(s, 6)} for t, s in ranked]}
