"""① at the cliff: bursts of N at ① on a fresh box, survived or died, and where the memory went (docs/box.md).

`flock /tmp/lab-cpu.lock python -m bench.cliff [--server seed|lab|both] [--sizes 4,8,10,12,16] [--tries 3]`

- `seed`: the server a student writes first (bench/seed_server.py: optimum, transformers, torch, one
  24-pair call a review), alone in a memory cgroup with the box's cap, on one core. What it holds at rest
  beyond the lab's own server is what the lab's box holds for it (`app/data/seed_server.json`).
- `lab`: `python -m app.box` with its defaults (what `just serve` runs).

Each try is a fresh server, measured as it comes up and at rest (one review served, unless `--cold`:
the charge, usage less inactive page cache, and the anonymous memory), then N distinct sample reviews
at once at ①: how many were answered, whether the kernel killed it (OOM kills in its group, or the box's
death count), and the peak.
Needs root (cgroups) and the `model` extra for `seed`. JSON lines on stdout, one per try.
"""

import argparse
import asyncio
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from app.engine.callshape_cache import cpu_model
from app.inside.cgroup_memory import MemoryFiles
from app.settings import MEMORY_CAP_BYTES, PROJECT_ROOT, TWIN_MODEL_DIR, Settings
from kit.memcap import MemoryCgroup
from kit.serverproc import ServerProcess, box_groups, free_port, stop_process, wait_healthy

SAMPLES = [str(s["text"]) for s in json.loads(Settings().samples_file.read_text(encoding="utf-8"))]
NAIVE = "/api/naive/predict"
MIB = 2**20


def texts_for(n: int, attempt: int) -> list[str]:
    """N distinct sample reviews, as the page sends them: consecutive samples, a different stretch each try."""
    offset = (attempt * n) % len(SAMPLES)
    return [f"{SAMPLES[(offset + i) % len(SAMPLES)]} #{attempt}-{i}" for i in range(n)]


async def burst(url: str, texts: list[str]) -> list[int]:
    """Statuses of N requests sent at once (0: the connection broke, as when the box is killed); N = 0: at rest only."""
    if not texts:
        return []

    async def one(client: httpx.AsyncClient, text: str) -> int:
        try:
            return (await client.post(NAIVE, json={"text": text})).status_code
        except httpx.TransportError:
            return 0

    limits = httpx.Limits(max_connections=len(texts))
    async with httpx.AsyncClient(base_url=url, timeout=600, limits=limits) as client:
        return list(await asyncio.gather(*(one(client, t) for t in texts)))


def seed_model_dir(work: Path, model_dir: Path = TWIN_MODEL_DIR) -> Path:
    """The twin as optimum loads a checkpoint folder: its config (from the manifest), model.onnx and tokenizer."""
    from transformers import XLMRobertaConfig, XLMRobertaTokenizerFast  # the `model` extra, as the seed had

    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))["config"]
    XLMRobertaConfig(  # type: ignore[no-untyped-call,unused-ignore]
        vocab_size=manifest["vocab"],
        hidden_size=manifest["hidden"],
        num_hidden_layers=manifest["layers"],
        num_attention_heads=manifest["heads"],
        intermediate_size=manifest["ffn"],
        max_position_embeddings=manifest["positions"],
        num_labels=1,
        type_vocab_size=1,
    ).save_pretrained(work)
    (work / "model.onnx").symlink_to(model_dir / "model.onnx")
    specials = {"bos_token": "<s>", "eos_token": "</s>", "sep_token": "</s>", "cls_token": "<s>"}
    XLMRobertaTokenizerFast(  # type: ignore[no-untyped-call,unused-ignore]
        tokenizer_file=str(model_dir / "tokenizer.json"),
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=512,
        **specials,
    ).save_pretrained(work)
    return work


def charged(group_dir: Path) -> dict[str, int]:
    """What counts against the cap and cannot simply be dropped, and the anonymous part."""
    files = MemoryFiles.at(group_dir)
    return {"charged": files.charged_bytes(), "anon": files.anon_bytes()}


@contextmanager
def seed_server(model: Path, core: int) -> Iterator[tuple[str, MemoryCgroup]]:
    """The seed's server alone in a fresh memory group with the box's cap, pinned to one core."""
    port = free_port()
    uvicorn = [sys.executable, "-m", "uvicorn", "bench.seed_server:app", "--port", str(port)]
    uvicorn += ["--host", "127.0.0.1", "--no-access-log", "--log-level", "warning"]
    with MemoryCgroup(MEMORY_CAP_BYTES, name=f"lab-cliff-{os.getpid()}") as group:
        join = f"echo $$ > {shlex.quote(str(group.procs_file))} && exec taskset -c {core} {shlex.join(uvicorn)}"
        env = {**os.environ, "LAB_SEED_MODEL_DIR": str(model)}
        process = subprocess.Popen(["sh", "-c", join], cwd=PROJECT_ROOT, env=env)
        try:
            wait_healthy(f"http://127.0.0.1:{port}", process, limit_s=300)
            yield f"http://127.0.0.1:{port}", group
        finally:
            stop_process(process, limit_s=10)


def reset_peak(group_dir: Path) -> None:
    (group_dir / "memory.max_usage_in_bytes").write_text("0")


def one_review(url: str) -> None:
    """The review served before the rest is measured (what `--cold` leaves out), then its memory settles."""
    httpx.post(f"{url}{NAIVE}", json={"text": SAMPLES[0]}, timeout=120)
    time.sleep(2)


def try_seed(model: Path, n: int, attempt: int, core: int, prime: bool) -> dict[str, Any]:
    with seed_server(model, core) as (url, group):
        ready = charged(group.folder)
        if prime:
            one_review(url)
        rest = charged(group.folder)
        reset_peak(group.folder)
        statuses = asyncio.run(burst(url, texts_for(n, attempt)))
        time.sleep(0.5)
        died = group.oom_kills() > 0
        return {"ready": ready, "rest": rest, "peak": group.peak_bytes(), "statuses": statuses, "died": died}


def box_stats(url: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{url}/api/stats", timeout=30).json()
    return body


def try_lab(n: int, attempt: int, stand_in: bool, prime: bool) -> dict[str, Any]:
    with ServerProcess(TWIN_MODEL_DIR, box=True, LAB_BOX_STAND_IN="1" if stand_in else "0") as server:
        groups = box_groups(server.pid)
        memory_dir = groups.dirs["memory"] if groups is not None else None
        ready = charged(memory_dir) if memory_dir is not None else {}
        if prime:
            one_review(server.url)
        rest = charged(memory_dir) if memory_dir is not None else {}
        if memory_dir is not None:
            reset_peak(memory_dir)
        deaths = box_stats(server.url)["box"]["deaths"]
        statuses = asyncio.run(burst(server.url, texts_for(n, attempt)))
        peak = MemoryFiles.at(memory_dir).peak_bytes() if memory_dir is not None else 0
        after = _after_death(server.url)
        died = after["box"]["deaths"] > deaths
        if died:  # the next incarnation's group starts its peak afresh: the dead one's is the box's own record
            peak = (after["box"]["last_death"] or {}).get("peak_bytes") or peak
        return {"ready": ready, "rest": rest, "peak": peak, "statuses": statuses, "died": died}


def _after_death(url: str, limit_s: float = 300) -> dict[str, Any]:
    """/api/stats once the box answers again (after a death the next incarnation loads its model first)."""
    wait_healthy(url, limit_s=limit_s)
    return box_stats(url)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", choices=("seed", "lab", "both"), default="both")
    parser.add_argument("--sizes", default="4,8,10,12,16")
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--core", type=int, default=1, help="the seed server's core (the lab's box picks its own)")
    parser.add_argument(
        "--no-stand-in", action="store_true", help="the lab's box without the seed's libraries' memory (to measure it)"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="fire at the box as it comes up, as the first student after a start or a death does (no review first)",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    servers = ["seed", "lab"] if args.server == "both" else [args.server]
    print(json.dumps({"host": cpu_model(), "started": f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC"}), flush=True)
    with tempfile.TemporaryDirectory(prefix="lab-seed-model-") as work:
        model = seed_model_dir(Path(work)) if "seed" in servers else Path(work)
        for server in servers:
            for n in sizes:
                for attempt in range(args.tries):
                    run = (
                        try_seed(model, n, attempt, args.core, not args.cold)
                        if server == "seed"
                        else try_lab(n, attempt, not args.no_stand_in, not args.cold)
                    )
                    statuses = run.pop("statuses")
                    label = "lab (no stand-in)" if server == "lab" and args.no_stand_in else server
                    row = {"server": label, "n": n, "try": attempt + 1, "answered": statuses.count(200), **run}
                    row["cold"] = args.cold
                    for when in ("ready", "rest"):  # as it came up; before the burst
                        row[f"{when}_mib"] = {k: round(v / MIB) for k, v in row.pop(when).items()}
                    row["peak_mib"] = round(row.pop("peak") / MIB)
                    row["at"] = f"{datetime.now(UTC):%H:%M:%S}"
                    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
