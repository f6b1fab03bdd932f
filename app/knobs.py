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

from app.errors import InvalidKnob, NotInstructor
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

    def __init__(self, settings: Settings, knobs: dict[str, tuple[KnobSpec, Apply]], file: Path | None) -> None:
        self._settings = settings
        self._knobs = knobs
        self._file = file
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
        if setting not in self._knobs:
            raise InvalidKnob(f"No knob called {setting!r}; the knobs are {', '.join(sorted(self._knobs))}.")
        spec, apply = self._knobs[setting]
        if not spec.low <= value <= spec.high:
            raise InvalidKnob(f"{setting} must lie between {spec.low:g} and {spec.high:g} {spec.unit}; got {value:g}.")
        if spec.unit in ("seats", "reviews", "jobs") and value != int(value):
            raise InvalidKnob(f"{setting} counts {spec.unit}: a whole number, not {value:g}.")
        old = self.value(setting)
        self._set(setting, value, apply)
        self._version += 1
        self._changes[setting] += 1
        self._last = Change(self._version, setting, old, value, time.time())
        self._save()
        log.warning("Knob %s: %g -> %g (change %d)", setting, old, value, self._version)
        return self._last

    def restore(self) -> None:
        """Apply the values a previous run of this box left (unknown or out-of-bounds entries are ignored)."""
        if self._file is None or not self._file.exists():
            return
        try:
            saved = json.loads(self._file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("Ignoring the knobs file %s: %s", self._file, exc)
            return
        for setting, value in (saved if isinstance(saved, dict) else {}).items():
            if setting in self._knobs and isinstance(value, int | float):
                spec, apply = self._knobs[setting]
                if spec.low <= value <= spec.high:
                    self._set(setting, float(value), apply)

    def snapshot(self) -> KnobsSnapshot:
        return KnobsSnapshot({name: self.value(name) for name in self._knobs}, dict(self._changes), self._last)

    def _set(self, setting: str, value: float, apply: Apply) -> None:
        current = getattr(self._settings, setting)
        typed = int(value) if isinstance(current, int) and not isinstance(current, bool) else value
        setattr(self._settings, setting, typed)
        apply(float(typed))

    def _save(self) -> None:
        if self._file is None:
            return
        self._file.parent.mkdir(parents=True, exist_ok=True)
        temporary = self._file.with_suffix(".tmp")
        temporary.write_text(json.dumps({name: self.value(name) for name in self._knobs}), encoding="utf-8")
        temporary.replace(self._file)  # atomic: a crash mid-write never leaves half a file
