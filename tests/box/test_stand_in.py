"""Memory the box holds for the seed's server: resident, given back on close, declared where the box is described."""

from pathlib import Path
from typing import ClassVar, NoReturn

import psutil
import pytest

from app.inside.report import model_info, stand_in, summary
from app.inside.stand_in import HeldMemory, measured_figure
from app.lab import open_lab
from app.settings import BoxState, Settings
from tests.fakes import GatedScorer

MIB = 2**20


def test_held_memory_is_resident_until_closed() -> None:
    process = psutil.Process()
    before = process.memory_info().rss
    held = HeldMemory(64 * MIB)
    during = process.memory_info().rss
    assert held.size == 64 * MIB
    assert during - before >= 60 * MIB  # every page written: charged to the box, not just reserved
    held.close()
    assert held.size == 0
    assert process.memory_info().rss < during - 48 * MIB


def test_nothing_is_held_for_zero_bytes() -> None:
    held = HeldMemory(0)
    assert held.size == 0
    held.close()


def test_the_measured_figure_says_what_it_stands_for_and_when() -> None:
    figure = measured_figure()
    assert figure.bytes > 100 * MIB
    assert "torch" in figure.stands_for and "optimum" in figure.stands_for
    assert "UTC" in figure.measured


def test_the_box_declares_what_it_holds_on_api_model_and_in_its_line() -> None:
    state = BoxState(memory_cap_bytes=1200 * MIB, memory_mode="cgroup", stand_in_bytes=200 * MIB)
    declared = model_info(state, None)["stand_in"]
    assert declared["bytes"] == 200 * MIB
    assert declared["stands_for"] == measured_figure().stands_for
    assert "200 MiB of it held for the seed's libraries (stand-in)" in summary(state, None)


def test_a_box_without_the_stand_in_and_a_bare_server_declare_nothing() -> None:
    assert stand_in(None) is None
    assert stand_in(BoxState(stand_in_bytes=0)) is None
    assert model_info(None, None)["stand_in"] is None
    assert "stand-in" not in summary(BoxState(), None)


class RecordedHeld(HeldMemory):
    """A real stand-in that remembers every one made and whether it was given back."""

    made: ClassVar[list["RecordedHeld"]] = []

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.closed = False
        RecordedHeld.made.append(self)

    def close(self) -> None:
        self.closed = True
        super().close()


@pytest.mark.parametrize("fails", ["open_store", "Lab"])
async def test_a_failed_start_gives_the_stand_in_back(
    fails: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Whether start-up fails before the stand-in is made or after, nothing it held outlives the failed start."""

    def broken(*_args: object, **_kwargs: object) -> NoReturn:
        raise RuntimeError(f"{fails} failed")

    RecordedHeld.made = []
    monkeypatch.setattr("app.lab.HeldMemory", RecordedHeld)
    monkeypatch.setattr(f"app.lab.{fails}", broken)
    settings = Settings(
        warmup=False,
        job_store=f"sqlite:///{tmp_path / 'jobs.db'}",
        knobs_file=tmp_path / "knobs.json",
        box_state=BoxState(stand_in_bytes=8 * MIB),
    )
    with pytest.raises(RuntimeError, match=fails):
        async with open_lab(settings, GatedScorer(gated=False)):
            pass
    assert all(held.closed for held in RecordedHeld.made)
    if fails == "Lab":  # the last step of start-up: the stand-in was made, and given back
        assert len(RecordedHeld.made) == 1


async def test_a_started_lab_holds_the_stand_in_until_it_stops(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    RecordedHeld.made = []
    monkeypatch.setattr("app.lab.HeldMemory", RecordedHeld)
    state = BoxState(stand_in_bytes=8 * MIB)
    settings = Settings(warmup=False, job_store="memory://", knobs_file=tmp_path / "knobs.json", box_state=state)
    async with open_lab(settings, GatedScorer(gated=False)) as lab:
        assert lab.stand_in_bytes == 8 * MIB and not RecordedHeld.made[0].closed
    assert RecordedHeld.made[0].closed
