"""Who is in the class now: the student keys seen on any request lately (a page, its live panel, a burst).

⑤ keeps places for the students present who have not yet come in a crowd, so one student's twelve cannot
crowd out eleven classmates' one each (docs/adaptive.md, "Fair enough for a class"). Keys only, no
addresses: requests without a key are nobody's, and nothing is reserved for them.
"""

import time
from collections import OrderedDict
from collections.abc import Callable

WINDOW_S = 300.0  # a student who loaded the page or fired anything in the last five minutes is in the room
MAX_STUDENTS = 2_000  # a bound on memory against made-up keys, far above a class


class Presence:
    """Student keys by when each was last seen, oldest first; bounded in age and in number."""

    def __init__(
        self, window_s: float = WINDOW_S, max_students: int = MAX_STUDENTS, now: Callable[[], float] = time.monotonic
    ) -> None:
        self._window_s = window_s
        self._max = max_students
        self._now = now
        self._seen: OrderedDict[str, float] = OrderedDict()

    def seen(self, key: str) -> None:
        self._seen[key] = self._now()
        self._seen.move_to_end(key)
        while len(self._seen) > self._max:
            self._seen.popitem(last=False)

    def present(self) -> set[str]:
        """The keys seen within the window (the rest are forgotten here)."""
        horizon = self._now() - self._window_s
        while self._seen and next(iter(self._seen.values())) < horizon:
            self._seen.popitem(last=False)
        return set(self._seen)
