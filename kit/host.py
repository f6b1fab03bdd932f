"""The host a measurement ran on, in the words every report writes it: never a number without its host."""

import json
import os
import platform
from pathlib import Path

import psutil

from app.api.records_ko import host_ko as host_words
from app.engine.callshape_cache import cpu_model


def machine() -> str:
    """`vm (2 CPUs, 24 GiB, x86_64, no GPU)`."""
    memory_gib = psutil.virtual_memory().total / 2**30
    return f"{platform.node()} ({psutil.cpu_count()} CPUs, {memory_gib:.0f} GiB, {platform.machine()}, no GPU)"


def model_line(model_dir: Path) -> str:
    """`bge-reranker-base (offline twin, random weights) (random weights, 279 MB)`, from the model's manifest."""
    manifest = json.loads((model_dir / "manifest.json").read_text(encoding="utf-8"))
    size_mb = manifest.get("size_bytes", 0) / 1e6
    return f"{manifest.get('name')} ({manifest.get('weights')} weights, {size_mb:.0f} MB)"


def load_average() -> list[float]:
    """The 1/5/15-minute load, rounded: how busy the host was beside the measurement."""
    return [round(x, 2) for x in os.getloadavg()]


def host_ko(host: str | None = None) -> str:
    """A host in the page's Korean words (app/api/records_ko.py), from a report's host line ("vm (2 CPUs, …)
    (AMD EPYC), …"; this one by default): cores, the CPU's brand as written, no graphics card."""
    return host_words(host if host is not None else f"{machine()}, {cpu_model()}")
