"""What the supervisor learns from the instructor's knobs file: the box's kept target and memory cap.

The server's knob board writes the file on every change (app/knobs/board.py, atomically). The supervisor
reads it when the box starts and before each incarnation, so a restart keeps the instructor's
values, not the environment's (the group's limit, `LAB_BOX_STATE`, the server's environment), and
the watchdog reads it while a server runs, so a new cap holds at once where no memory cgroup does
it (app/knobs/box.py says why the file is the one channel). A kept value never turns on what the
environment turned off (a target or cap of 0), and one outside the knob's bounds is ignored (logged).
"""

import os
from pathlib import Path

from app.knobs.board import read_kept
from app.paths.registry import BOX_KNOBS, BOX_MEMORY_CAP, BOX_TARGET, every_knob
from app.settings import PROJECT_ROOT


def knobs_file() -> Path:
    """The file the box's server keeps the knobs in (`LAB_KNOBS_FILE`, else data/knobs.json)."""
    return Path(os.environ.get("LAB_KNOBS_FILE", str(PROJECT_ROOT / "data" / "knobs.json")))


class KeptKnobs:
    """The box knobs' kept values, re-read only when the file changed (a stat per look: cheap every 50 ms)."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self._seen: tuple[int, int, int] | None = None
        self._values: dict[str, float] = {}

    def values(self) -> dict[str, float]:
        try:
            st = os.stat(self.file)
            seen = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            seen = None
        if seen != self._seen:
            self._seen = seen
            read = read_kept(self.file, every_knob()) if seen is not None else {}
            self._values = {k.setting: read[k.setting] for k in BOX_KNOBS if k.setting in read}
        return self._values

    def target_s(self, default: float) -> float:
        return self.values().get(BOX_TARGET.setting, default) if default > 0 else default

    def memory_cap(self, default: int) -> int:
        return int(self.values().get(BOX_MEMORY_CAP.setting, default)) if default > 0 else default
