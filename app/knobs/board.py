"""The knobs an instructor turns in class: live values within bounds, applied to their owners, kept across restarts.

The lab's Settings stay the one place a value is read from (the page, the route summaries, the
hints), so a change is written there and handed to the owner that uses it at once (②'s gate, ③'s
batcher, ④'s service). Each change is counted and numbered, so every open page can announce it
and /metrics can count it; the values are written to a JSON file, so a restarted box keeps them.
Only someone with the instructor token (the lesson's, app/knobs/instructor.py) may change anything.
"""

import hmac
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from app.datafile import Unreadable, is_number, read_json
from app.errors import InvalidKnob, LabError, NotInstructor
from app.settings import Settings

log = logging.getLogger(__name__)

KNOBS_FILE_MAX_BYTES = 16 * 1024  # a dozen numbers take a few hundred


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

    @property
    def step(self) -> float: ...

    @property
    def whole(self) -> bool: ...

    def on_step(self, value: float) -> bool: ...


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
        token: str,
        absent: dict[str, str] | None = None,
    ) -> None:
        self._settings = settings
        self._knobs = knobs
        self._file = file
        self._absent = absent or {}  # knobs this server cannot turn, and why (the box's, outside the box)
        # What the file keeps: the values turned here and those a previous run kept (a knob this server lacks
        # included, for a server that has it). Never a value nobody turned, so the environment's stand.
        self._kept: dict[str, float] = {}
        self._changes = dict.fromkeys(knobs, 0)
        self._last: Change | None = None
        self._version = 0
        self.token = token
        self.on_turn: Callable[[Change], None] | None = None  # the lesson's record marks each turn (app/lesson)

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
        value += 0.0  # -0 is 0 (where 0 is within bounds)
        if (why := misfit(spec, value)) is not None:
            raise InvalidKnob(f"{why}.")
        old = self.value(setting)
        self._set(setting, value, apply)
        value = self._kept[setting] = self.value(setting)  # as the owner took it: a count is a whole number
        self._version += 1
        self._changes[setting] += 1
        self._last = Change(self._version, setting, old, value, time.time())
        self._save()
        log.warning("Knob %s: %s -> %s (change %d)", setting, old, value, self._version)
        if self.on_turn is not None:
            self.on_turn(self._last)
        return self._last

    def restore(self, known: Mapping[str, KnobSpec]) -> None:
        """Apply the values a previous run of this box left (`known`: every knob a file may hold, so each
        entry is checked against its own bounds and step; a bad one is logged and dropped; a value the settings
        already hold, e.g. the box's, which the supervisor passes on, is not re-applied). The values taken
        are one info line: the instructor's, nothing to warn about."""
        self._kept = read_kept(self._file, known)
        for setting, value in list(self._kept.items()):
            if setting in self._knobs and value != self.value(setting):
                _, apply = self._knobs[setting]
                try:
                    self._set(setting, value, apply)
                except LabError as exc:  # e.g. a memory cap below what this server uses now
                    log.warning("Not restoring %s = %s: %s", setting, value, exc.message)
                    del self._kept[setting]  # the environment's value stands, here and in the file
        if self._kept:
            kept = ", ".join(f"{name} = {amount(v, known[name].unit)}" for name, v in self._kept.items())
            log.info("Knobs kept in %s: %s", self._file, kept)

    def snapshot(self) -> KnobsSnapshot:
        return KnobsSnapshot({name: self.value(name) for name in self._knobs}, dict(self._changes), self._last)

    def _set(self, setting: str, value: float, apply: Apply) -> None:
        """The owner first: one that refuses (raises) leaves the settings as they were."""
        current = getattr(self._settings, setting)
        typed = round(value) if isinstance(current, int) and not isinstance(current, bool) else value
        apply(float(typed))
        setattr(self._settings, setting, typed)

    def _save(self) -> None:
        if self._file is None:
            return
        try:
            self._file.parent.mkdir(parents=True, exist_ok=True)
            temporary = self._file.with_suffix(".tmp")
            temporary.write_text(json.dumps(self._kept), encoding="utf-8")
            temporary.replace(self._file)  # atomic: a crash mid-write never leaves half a file
        except OSError as exc:  # the change holds in this server; only a restart forgets it
            log.warning("Cannot keep the knobs in %s (%s): a restart will not remember them.", self._file, exc)


def misfit(spec: KnobSpec, value: float) -> str | None:
    """Why `value` cannot be this knob's (out of bounds, or between its steps); None if it can."""
    low, high, step, got = (amount(v, spec.unit) for v in (spec.low, spec.high, spec.step, value))
    if not spec.low <= value <= spec.high:
        return f"{spec.setting} must lie between {low} and {high} {unit(spec.unit)}; got {got}"
    if not spec.on_step(value):
        whole = ": a whole number" if spec.whole else ""
        return f"{spec.setting} moves in steps of {step} ({unit(spec.unit)}) from {low}{whole}, not {got}"
    return None


def read_kept(file: Path | None, known: Mapping[str, KnobSpec]) -> dict[str, float]:
    """The values a knobs file holds that fit their knobs ({} when there is none or it cannot be read): one
    log line for an unreadable file, and one per entry dropped (an unknown knob, not a number, out of bounds)."""
    if file is None:
        return {}
    try:
        saved = read_json(file, KNOBS_FILE_MAX_BYTES)
    except FileNotFoundError:
        return {}
    except Unreadable as exc:
        log.warning("Ignoring the knobs file %s: %s.", file, exc)
        return {}
    if not isinstance(saved, dict):
        log.warning("Ignoring the knobs file %s: not a JSON object (%s).", file, type(saved).__name__)
        return {}
    kept: dict[str, float] = {}
    for setting, value in saved.items():
        spec = known.get(setting)
        why = (
            f"no knob called {setting[:40]!r}"
            if spec is None
            else f"{setting} is not a number ({describe(value)})"
            if not is_number(value)
            else misfit(spec, float(value))
        )
        if why is not None:
            log.warning("Ignoring an entry of the knobs file %s: %s.", file, why)
        else:
            kept[setting] = float(value) + 0.0
    return kept


def describe(value: object) -> str:
    """A kept entry that is not a number, in a few words for the log (never the whole of it)."""
    if isinstance(value, list | dict):
        return "a JSON array" if isinstance(value, list) else "a JSON object"
    return repr(value)[:40] if isinstance(value, bool | None | str) else str(value)[:40]


def unit(name: str) -> str:
    """How a unit is written to people: bytes as MiB (what the instructor page types)."""
    return "MiB" if name == "bytes" else name


def amount(value: float, name: str) -> str:
    """A value as people read it: bytes as MiB, to ten digits (8.000001 is not 8)."""
    shown = value / 2**20 if name == "bytes" else value
    return f"{shown:.10g}"
