"""The class's students in order of first arrival (학생 1, 2, …), and the nickname each may give on their page.

A student is a `lab_student` key, or an address for a client without one. The roster holds only students the
kept record still names (plus the nicknamed), so a client forging a new key per request grows it no further
than the record's own bound.
"""

import regex

from app.errors import InvalidNickname

__all__ = ["MAX_NICKNAME_CHARS", "Roster", "Student", "check_nickname"]

MAX_NICKNAME_CHARS = 20  # a lane's label on the projector; a Korean name and a number fit
# Controls, format characters (bidirectional overrides would reorder the lane's label), surrogates, private use,
# unassigned, and line or paragraph separators.
REFUSED = regex.compile(r"[\p{C}\p{Zl}\p{Zp}]", regex.V1)


def check_nickname(text: str) -> str:
    """The trimmed nickname ("" clears it), or InvalidNickname (422) saying why not."""
    if (bad := REFUSED.search(text)) is not None:
        raise InvalidNickname(
            f"`name` has U+{ord(bad.group()):04X} at character {bad.start()}: no control or format characters."
        )
    trimmed = text.strip()
    if len(trimmed) > MAX_NICKNAME_CHARS:
        raise InvalidNickname(f"`name` has {len(trimmed)} characters; a nickname has at most {MAX_NICKNAME_CHARS}.")
    return trimmed


class Student:
    __slots__ = ("key", "nickname", "number", "requests")

    def __init__(self, key: str, number: int, nickname: str = "") -> None:
        self.key = key
        self.number = number
        self.nickname = nickname
        self.requests = 0  # kept requests that name this student

    @property
    def name(self) -> str:
        return self.nickname or f"학생 {self.number}"

    def as_dict(self) -> dict[str, object]:
        return {"number": self.number, "name": self.name, "nickname": self.nickname}


class Roster:
    def __init__(self, max_students: int) -> None:
        self.max_students = max_students
        self._by_key: dict[str, Student] = {}
        self._last_number = 0
        self.changed: list[Student] = []  # since the last flush: the file and the live views get them

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, key: str) -> Student | None:
        return self._by_key.get(key)

    def all(self) -> list[Student]:
        return list(self._by_key.values())

    def seen(self, key: str) -> Student:
        """The student with this key, numbered now if new."""
        found = self._by_key.get(key)
        if found is None:
            if len(self._by_key) >= self.max_students:
                self._forget_idle()
            self._last_number += 1
            found = self._by_key[key] = Student(key, self._last_number)
            self.changed.append(found)
        return found

    def restore(self, key: str, number: int, nickname: str) -> None:
        """A student the lesson's file kept (numbers go on from the highest)."""
        self._by_key[key] = Student(key, number, nickname)
        self._last_number = max(self._last_number, number)

    def rename(self, key: str, nickname: str) -> Student:
        found = self.seen(key)
        found.nickname = check_nickname(nickname)
        self.changed.append(found)
        return found

    def released(self, key: str) -> None:
        """One kept request that named `key` was dropped from the record."""
        found = self._by_key.get(key)
        if found is not None:
            found.requests -= 1

    def _forget_idle(self) -> None:
        """Past the bound: forget students no kept request names, oldest first, down to nine tenths of it."""
        idle = [s for s in self._by_key.values() if s.requests <= 0]
        for s in idle[: max(1, len(self._by_key) - self.max_students * 9 // 10)]:
            del self._by_key[s.key]
