"""The benchmark's peer: LitServe serving the lab's own scoring function, batched like ③.

Started as its own process by `bench.peer` (`python -m bench.peer_litserve PORT`).
Same model, same topics, same `RerankerModel.score` in the call shape the lab serves (read
from the cache the lab's measurement left beside the model, or `LAB_PAIR_CHUNK`), one
onnxruntime thread; LitServe's batched loop with `max_batch_size=8, batch_timeout=0.025`.
Each batch's size is appended to `LAB_PEER_BATCH_LOG`, since LitServe sends no batch header.
Needs the optional extra `peer` (litserve); the lab server never imports this.
"""

import json
import os
import sys
from pathlib import Path
from typing import Any

import litserve as ls

from app.engine.callshape_cache import CACHE_NAME, host_key, settle_call_shape
from app.engine.model import Ranking, RerankerModel, load_topics
from app.settings import PROJECT_ROOT, TWIN_MODEL_DIR

TOPICS = PROJECT_ROOT / "app" / "data" / "topics.json"


class ReviewAPI(ls.LitAPI):  # type: ignore[misc]  # litserve ships no type hints
    """decode → a text, predict → `RerankerModel.score` on the batch, encode → the top topic."""

    def setup(self, device: str) -> None:
        model_dir = Path(os.environ.get("LAB_MODEL_DIR", str(TWIN_MODEL_DIR)))
        self.model = RerankerModel(model_dir, load_topics(TOPICS), intra_op_threads=1)
        samples = json.loads((PROJECT_ROOT / "app" / "data" / "sample_reviews.json").read_text(encoding="utf-8"))
        chunk = os.environ.get("LAB_PAIR_CHUNK")
        settle_call_shape(
            self.model,
            sorted((str(s["text"]) for s in samples), key=len),
            key=lambda: host_key(model_dir / "model.onnx", 1),
            cache_file=model_dir / CACHE_NAME,
            override=int(chunk) if chunk else None,
        )
        self.model.score(["워밍업 리뷰"])  # the lab warms up too: neither pays the first call's setup
        log = os.environ.get("LAB_PEER_BATCH_LOG")
        self.batch_log = open(log, "a", encoding="utf-8") if log else None  # noqa: SIM115  # lives as long as the worker

    def decode_request(self, request: dict[str, Any]) -> str:
        return str(request["text"])

    def predict(self, texts: list[str]) -> list[Ranking]:
        if self.batch_log is not None:
            self.batch_log.write(f"{len(texts)}\n")
            self.batch_log.flush()
        return self.model.score(texts)

    def encode_response(self, ranking: Ranking) -> dict[str, Any]:
        top = ranking[0]
        return {"top": {"id": top.id, "label": top.label, "score": top.score}}


def main() -> None:
    port = int(sys.argv[1])
    api = ReviewAPI(max_batch_size=8, batch_timeout=0.025)
    # No request timeout: ③ has none either, so both queue the same work under overload.
    server = ls.LitServer(api, accelerator="cpu", workers_per_device=1, timeout=False)
    server.run(host="127.0.0.1", port=port, num_api_servers=1, generate_client_file=False, log_level="warning")


if __name__ == "__main__":
    main()
