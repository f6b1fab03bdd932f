"""How many requests the front itself refused (its 429 front_limit), for the instructor's terminal.

nginx writes one line per refusal to `front-refusals.log` in the front's state folder (nginx.conf's
@front_limit). The launcher reads what was added since it last looked and says it once a minute;
the file is emptied once read past a size, so a flood never fills the disk (nginx appends with
O_APPEND, so its next line lands at the new end).
"""

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Refusals"]

KEEP_BYTES = 1 << 20


@dataclass
class Refusals:
    path: Path
    _offset: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        """What an earlier front refused is not this class's news: start at the log's end."""
        try:
            self._offset = self.path.stat().st_size
        except FileNotFoundError:
            self._offset = 0

    def since_last(self) -> Counter[str]:
        """Refusals added since the last call, by the request's path ('/api/naive/predict': 12, …)."""
        try:
            with self.path.open("rb") as log:
                size = log.seek(0, 2)
                if size < self._offset:  # emptied by someone else: read it from the start
                    self._offset = 0
                log.seek(self._offset)
                added = log.read(size - self._offset)
        except FileNotFoundError:
            return Counter()
        whole = added.rpartition(b"\n")[0]  # a line nginx is still writing waits for the next look
        self._offset += len(whole) + 1 if whole else 0
        if self._offset >= KEEP_BYTES:
            self.path.write_bytes(b"")
            self._offset = 0
        return Counter(
            line.split()[-1].split(b"?")[0].decode("ascii", "replace") for line in whole.splitlines() if line.split()
        )

    @staticmethod
    def said(counts: Counter[str], minutes: float) -> str:
        """One line for the instructor, or '' when the front refused nobody."""
        total = sum(counts.values())
        if not total:
            return ""
        top = ", ".join(f"{path} {n}" for path, n in counts.most_common(3))
        return (
            f"The front refused {total} requests in the last {minutes:g} min (429 front_limit: one student or "
            f"address over its share, not the box being full): {top}"
        )
