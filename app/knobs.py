"""The knobs an instructor turns in class: live values within bounds, applied to their owners, kept across restarts.

The lab's Settings stay the one place a value is read from (the page, the route summaries, the
hints), so a change is written there and handed to the owner that uses it at once (②'s gate, ③'s
batcher, ④'s service). Each change is counted and numbered, so every open page can announce it
and /metrics can count it; the values are written to a JSON file, so a restarted box keeps them.
Only someone with the instructor token (drawn at start-up and printed) may change anything.
"""

import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from app.errors import InvalidKnob, LabError, NotInstructor
from app.settings import Settings

log = logging.getLogger(__name__)


class KnobSpec(Protocol):
    """What the board needs to know about one knob (the path registry's `Knob` is one)."""

    @property
    def setting(self) -> str: ...

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...

    @property
    def unit(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Change:
    version: int  # 1, 2, …: pages compare it to the last one they announced
    setting: str
    old: float
    new: float
    at: float  # epoch seconds


@dataclass(frozen=True, slots=True)
class KnobsSnapshot:
    values: dict[str, float]
    changes: dict[str, int]  # per knob, since start-up
    last: Change | None


Apply = Callable[[float], None]


class KnobBoard:
    """Owns the live values of the turnable settings; `turn` checks, applies, persists and counts."""

    def __init__(
        self,
        settings: Settings,
        knobs: dict[str, tuple[KnobSpec, Apply]],
        file: Path | None,
        absent: dict[str, str] | None = None,
    ) -> None:
        self._settings = settings
        self._knobs = knobs
        self._file = file
        self._absent = absent or {}  # knobs this server cannot turn, and why (the box's, outside the box)
        self._kept: dict[str, float] = {}  # the file's other entries: a server without a knob keeps its value
        self._changes = dict.fromkeys(knobs, 0)
        self._last: Change | None = None
        self._version = 0
        self.token = secrets.token_urlsafe(18)

    @property
    def specs(self) -> dict[str, KnobSpec]:
        return {name: spec for name, (spec, _) in self._knobs.items()}

    def allowed(self, token: str | None) -> None:
        """Raises NotInstructor (403) unless `token` is this box's instructor token."""
        if not token or not hmac.compare_digest(token.encode("utf-8", "replace"), self.token.encode()):
            raise NotInstructor("Only the instructor may turn the knobs: send the token the box printed at start-up.")

    def value(self, setting: str) -> float:
        return float(getattr(self._settings, setting))

    def turn(self, setting: str, value: float) -> Change:
        """Check bounds, write the setting, hand it to its owner, persist, count."""
        if setting in self._absent:
            raise InvalidKnob(f"{setting} cannot be turned on this server: {self._absent[setting]}.")
        if setting not in self._knobs:
            raise InvalidKnob(f"No knob called {setting!r}; the knobs are {', '.join(sorted(self._knobs))}.")
        spec, apply = self._knobs[setting]
        if not spec.low <= value <= spec.high:
            low, high, got = (amount(v, spec.unit) for v in (spec.low, spec.high, value))
            raise InvalidKnob(f"{setting} must lie between {low} and {high} {unit(spec.unit)}; got {got}.")
        if spec.unit in ("seats", "reviews", "jobs", "bytes") and value != int(value):
            raise InvalidKnob(f"{setting} counts {spec.unit}: a whole number, not {value:g}.")
        old = self.value(setting)
        self._set(setting, value, apply)
        self._version += 1
        self._changes[setting] += 1
        self._last = Change(self._version, setting, old, value, time.time())
        self._save()
        log.warning("Knob %s: %s -> %s (change %d)", setting, old, value, self._version)
        return self._last

    def restore(self) -> None:
        """Apply the values a previous run of this box left (unknown or out-of-bounds entries are ignored;
        a value the settings already hold, e.g. the box's, which the supervisor passes on, is not re-applied)."""
        self._kept = read_kept(self._file)
        for setting, value in self._kept.items():
            if setting in self._knobs and value != self.value(setting):
                spec, apply = self._knobs[setting]
                if spec.low <= value <= spec.high:
                    try:
                        self._set(setting, value, apply)
                    except LabError as exc:  # e.g. a memory cap below what this server uses now
                        log.warning("Not restoring %s = %s: %s", setting, value, exc.message)

    def snapshot(self) -> KnobsSnapshot:
        return KnobsSnapshot({name: self.value(name) for name in self._knobs}, dict(self._changes), self._last)

    def _set(self, setting: str, value: float, apply: Apply) -> None:
        """The owner first: one that refuses (raises) leaves the settings as they were."""
        current = getattr(self._settings, setting)
        typed = int(value) if isinstance(current, int) and not isinstance(current, bool) else value
        apply(float(typed))
        setattr(self._settings, setting, typed)

    def _save(self) -> None:
        if self._file is None:
            return
        self._file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._file.with_suffix(".tmp")
        values = self._kept | {name: self.value(name) for name in self._knobs}
        temporary.write_text(json.dumps(values), encoding="utf-8")
        temporary.replace(self._file)  # atomic: a crash mid-write never leaves half a file


def read_kept(file: Path | None) -> dict[str, float]:
    """The numbers a knobs file holds ({} when there is none or it cannot be read); bounds are the reader's."""
    if file is None or not file.exists():
        return {}
    try:
        saved = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        log.warning("Ignoring the knobs file %s: %s", file, exc)
        return {}
    if not isinstance(saved, dict):
        return {}
    return {k: float(v) for k, v in saved.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def unit(name: str) -> str:
    """How a unit is written to people: bytes as MiB (what the instructor page types)."""
    return "MiB" if name == "bytes" else name


def amount(value: float, name: str) -> str:
    return f"{value / 2**20:g}" if name == "bytes" else f"{value:g}"
