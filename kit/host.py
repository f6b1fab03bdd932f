"""The host a measurement ran on, in the words every report writes it: never a number without its host."""

import json
import os
import platform
import re
from pathlib import Path

import psutil

from app.engine.callshape import cpu_model

# Brand words in a CPU's name, in Korean, for the page's "측정:" lines (every word on a figure is Korean).
CPU_KO = {"AMD": "에이엠디", "EPYC": "에픽", "Ryzen": "라이젠", "Intel": "인텔", "Xeon": "제온", "Core": "코어"}


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
    """A host in Korean words, from a report's host line ("vm (2 CPUs, …) (AMD EPYC), …"; this one by default):
    cores, the CPU's brand, no graphics card."""
    host = host if host is not None else f"{os.cpu_count()} CPUs {cpu_model()}"
    cores = re.search(r"(\d+) CPUs", host)
    brand = " ".join(
        CPU_KO[w] for w in re.split(r"[\s(),]+", host.replace("(R)", " ").replace("(TM)", " ")) if w in CPU_KO
    )
    parts = [f"코어 {cores[1]}개" if cores else "", brand, "그래픽카드 없음"]
    return f"실습 서버({', '.join(p for p in parts if p)})"
