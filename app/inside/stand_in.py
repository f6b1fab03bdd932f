"""Memory the box holds for the seed's server: what its libraries keep resident that the lab's own server does not load.

The server a student writes first (bench/seed_server.py) serves ① through optimum, which imports
transformers and torch; the lab's server needs only onnxruntime and tokenizers. At rest the seed's
server holds more than the lab's by the figure bench/cliff.py measures (app/data/seed_server.json).
The box holds that much in written pages from start-up on, so its memory cap meets the crowd where
the seed's box met it. Like the twin's random weights, it is declared wherever the box is described:
/api/model, the page, the box's one line and docs/box.md ("① at the cliff").
"""

import json
import mmap
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FIGURE_FILE = Path(__file__).resolve().parents[1] / "data" / "seed_server.json"
PAGE = mmap.PAGESIZE


@dataclass(frozen=True, slots=True)
class StandIn:
    """How much the box holds and for what, as measured (date, host, versions)."""

    bytes: int
    stands_for: str
    measured: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def measured_figure(file: Path = FIGURE_FILE) -> StandIn:
    data = json.loads(file.read_text(encoding="utf-8"))
    return StandIn(int(data["libraries_bytes"]), str(data["stands_for"]), str(data["measured"]))


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
