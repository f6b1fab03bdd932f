"""Memory the box holds for the seed's server: what its libraries keep resident that the lab's own server does not load.

The server a student writes first (bench/seed_server.py) serves ① through optimum, which imports
transformers and torch; the lab's server needs only onnxruntime and tokenizers. At rest the seed's
server holds more than the lab's by the figure bench/stand_in.py measures. A host that has measured
it (`just bench-stand-in`, once) keeps its own figure in `models/stand-in.json`, keyed by its CPU as
the call-shape cache is; every other host holds the committed figure (app/data/seed_server.json).
The box holds that much in written pages from start-up on, so its memory cap meets the crowd where
the seed's box met it. Like the twin's random weights, it is declared wherever the box is described,
with where the figure came from: /api/model, /api/stats, the page, the box's one line and docs/box.md.
"""

import json
import logging
import mmap
import os
import tempfile
from pathlib import Path
from typing import Any

from app.datafile import Unreadable, is_number, read_json
from app.host import cpu_model
from app.settings import StandIn

log = logging.getLogger(__name__)

FIGURE_FILE = Path(__file__).resolve().parents[1] / "data" / "seed_server.json"
CACHE_NAME = "stand-in.json"  # this host's own measurement, in models/ (MODELS_DIR: not committed)
CACHE_MAX_BYTES = 16 * 1024  # a measurement is about 1 KB
# Measured 273-289 MiB; a figure near the 1.2 GiB cap would leave the lab no room: a wrong file, not a measurement.
MAX_BYTES = 1 << 30
PAGE = mmap.PAGESIZE


def measured_figure(file: Path = FIGURE_FILE) -> StandIn:
    """The committed figure, measured on the host and date it names."""
    data = json.loads(file.read_text(encoding="utf-8"))
    origin = f"the committed figure from {data['host']}, {data['date']}"
    return StandIn(int(data["libraries_bytes"]), str(data["stands_for"]), str(data["measured"]), False, origin)


def cache_key(cpu: str | None = None) -> dict[str, Any]:
    """What the measurement depends on besides the libraries: the CPU, as the call shape's key names it."""
    return {"cpu": cpu_model() if cpu is None else cpu}


def host_figure(cache: Path, committed: Path = FIGURE_FILE, cpu: str | None = None) -> StandIn:
    """This host's own figure when its cache was measured on this CPU, else the committed one. A cache that is
    not one `write_cache` would write costs one log line, never the start."""
    try:
        data = read_json(cache, CACHE_MAX_BYTES)
        if not isinstance(data, dict):
            raise Unreadable("not a JSON object")
        if data.get("key") == cache_key(cpu):
            return cached_figure(data, cache)
        log.warning("The stand-in cache %s was measured on another CPU: holding the committed figure.", cache)
    except FileNotFoundError:
        pass
    except Unreadable as exc:
        log.warning("Ignoring the stand-in cache %s (%s): holding the committed figure.", cache, exc)
    return measured_figure(committed)


def cached_figure(data: dict[str, Any], cache: Path) -> StandIn:
    """The figure as `write_cache` wrote it, else Unreadable (a bound that would kill the box included)."""
    size, stands_for, measured = data.get("libraries_bytes"), data.get("stands_for"), data.get("measured")
    if not is_number(size) or not isinstance(size, int) or not 0 < size <= MAX_BYTES:
        raise Unreadable(f"libraries_bytes {str(size)[:20]} is not a whole number of bytes from 1 to {MAX_BYTES}")
    if not isinstance(stands_for, str) or not isinstance(measured, str):
        raise Unreadable("stands_for or measured is not a string")
    return StandIn(size, stands_for, measured, True, f"measured here ({measured[:10]}, {cache.name})")


def write_cache(path: Path, size: int, stands_for: str, measured: str, key: dict[str, Any]) -> None:
    """Atomically, so a box starting meanwhile reads the old figure or the new one, never half of one."""
    payload = {"key": key, "libraries_bytes": size, "stands_for": stands_for, "measured": measured}
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as f:
        json.dump(payload, f, indent=1, ensure_ascii=False)
    os.replace(f.name, path)


class HeldMemory:
    """`size` bytes of anonymous memory with every page written: resident and charged to the box until closed."""

    def __init__(self, size: int) -> None:
        # Private anonymous pages, as a library's heap is: counted in the RSS and the cgroup's anonymous memory.
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        self._pages = mmap.mmap(-1, max(size, PAGE), flags=flags) if size > 0 else None
        if self._pages is not None:
            block = b"\x5a" * (1 << 20)
            for start in range(0, len(self._pages), len(block)):
                end = min(start + len(block), len(self._pages))
                self._pages[start:end] = block[: end - start]

    @property
    def size(self) -> int:
        return 0 if self._pages is None else len(self._pages)

    def close(self) -> None:
        if self._pages is not None:
            self._pages.close()
            self._pages = None
