"""One memory cgroup's numbers, v1 or v2, read the same way by the box and by the benchmarks."""

from pathlib import Path
from typing import Any


class MemoryFiles:
    """One memory cgroup's files, v1 or v2: the one reader the box and the benchmarks share.

    v1: `memory.limit_in_bytes`, `memory.usage_in_bytes`, `memory.max_usage_in_bytes`, `memory.failcnt`,
    `oom_kill` in `memory.oom_control`, the hierarchy's `total_*` keys in `memory.stat`. v2: `memory.max`,
    `memory.current`, `memory.peak` (kernel 5.19 on), `max` and `oom_kill` in `memory.events`, `memory.stat`.
    A read raises OSError or ValueError when the folder or the kernel refuses: each caller picks its fallback.
    """

    def __init__(self, folder: Path, version: int) -> None:
        self.folder = folder
        self.version = version

    @classmethod
    def at(cls, folder: Path) -> "MemoryFiles":
        """The version told by the folder itself, for a caller handed only the folder (a v2 group has neither)."""
        v1 = any((folder / name).exists() for name in ("memory.usage_in_bytes", "memory.limit_in_bytes"))
        return cls(folder, 1 if v1 else 2)

    def _file(self, v1: str, v2: str) -> Path:
        return self.folder / (v1 if self.version == 1 else v2)

    def _keyed(self, name: str, key: str) -> int:
        """`key`'s value in one of the flat keyed files (memory.stat, memory.events, …); 0 if it is not there."""
        for line in (self.folder / name).read_text().splitlines():
            found, _, value = line.partition(" ")
            if found == key:
                return int(value)
        return 0

    @property
    def limit_file(self) -> Path:
        return self._file("memory.limit_in_bytes", "memory.max")

    def write_limit(self, cap_bytes: int) -> None:
        """The cap (OSError when the kernel refuses, e.g. v1's EBUSY when it cannot reclaim below it)."""
        self.limit_file.write_text(str(cap_bytes))

    def usage_bytes(self) -> int:
        return int(self._file("memory.usage_in_bytes", "memory.current").read_text())

    def anon_bytes(self) -> int:
        """Process memory proper (anonymous pages), without the page cache the group is also charged for."""
        return self._keyed("memory.stat", "total_rss" if self.version == 1 else "anon")

    def charged_bytes(self) -> int:
        """What counts against the cap and cannot simply be dropped: usage less the inactive page cache
        (the model file read at start-up, reclaimed first)."""
        inactive = self._keyed("memory.stat", "total_inactive_file" if self.version == 1 else "inactive_file")
        return self.usage_bytes() - inactive

    def peak_bytes(self) -> int:
        """The highest usage so far; 0 where the kernel keeps none (v2 before 5.19)."""
        peak = self._file("memory.max_usage_in_bytes", "memory.peak")
        return int(peak.read_text()) if peak.exists() else 0

    def reset_peak(self) -> bool:
        """Start the peak afresh (v1: write 0; v2: any write, kernel 6.12 on); False where the kernel cannot."""
        peak = self._file("memory.max_usage_in_bytes", "memory.peak")
        try:
            if peak.exists():  # a kernel file: never create one
                peak.write_text("0")
                return True
        except OSError:
            pass
        return False

    def oom_kills(self) -> int:
        """Processes the kernel killed in this group for want of memory."""
        return self._keyed("memory.oom_control" if self.version == 1 else "memory.events", "oom_kill")

    def limit_hits(self) -> int:
        """How often usage reached the cap (the kernel reclaimed or killed): v1 `failcnt`, v2 `max` events."""
        if self.version == 1:
            return int((self.folder / "memory.failcnt").read_text())
        return self._keyed("memory.events", "max")


def charged_bytes(memory_dir: str | None) -> int | None:
    """What the memory cgroup charges against the cap and cannot simply drop; None without a readable group."""
    if memory_dir is None:
        return None
    try:
        return MemoryFiles.at(Path(memory_dir)).charged_bytes()
    except (OSError, ValueError):
        return None


def memory_now(memory_dir: str | None, cap_bytes: int, rss_bytes: int, stand_in_bytes: int = 0) -> dict[str, Any]:
    """/api/stats' `memory`: the box's memory as the kernel counts it (the cgroup, else this process's RSS),
    in bytes and % of the cap (None without a cap), and that split in two: the stand-in the box holds for
    the seed's libraries (app/inside/stand_in.py: resident, written pages) and the lab's own, the rest."""
    charged = charged_bytes(memory_dir)
    used, source = (charged, "cgroup") if charged is not None else (rss_bytes, "rss")
    return {
        "bytes": used,
        "source": source,
        "cap_bytes": cap_bytes or None,
        "pct_of_cap": round(100 * used / cap_bytes, 1) if cap_bytes > 0 else None,
        "lab_bytes": max(used - stand_in_bytes, 0),
        "stand_in_bytes": stand_in_bytes,
    }


def write_memory_limit(folder: Path, cap_bytes: int) -> None:
    """The memory cgroup's cap, in the file of its version (OSError when the kernel refuses)."""
    MemoryFiles.at(folder).write_limit(cap_bytes)
