"""Memory the box holds for the seed's server: resident, given back on close, declared where the box is described."""

import logging
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, NoReturn

import psutil
import pytest

from app.box.placement import Placement
from app.box.supervisor import Supervisor
from app.inside.report import model_info, stand_in, summary
from app.inside.stand_in import CACHE_NAME, HeldMemory, cache_key, host_figure, measured_figure, write_cache
from app.lab import open_lab
from app.settings import BoxState, Settings, StandIn
from tests.conftest import LabClientFactory
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
    committed = "the committed figure from AMD EPYC (2 vCPUs, avx2), 2026-12-02"
    assert f"200 MiB of it held for the seed's libraries (stand-in, {committed})" in summary(state, None)


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


COMMITTED = "the committed figure from AMD EPYC (2 vCPUs, avx2), 2026-12-02"
MEASURED = "2026-12-05 05:06-05:12 UTC, AMD EPYC (2 vCPUs, avx2), python -m bench.stand_in --tries 3"


def cached(path: Path, size: int = 123 * MIB, cpu: str | None = None) -> Path:
    write_cache(path, size, "optimum, transformers and torch, here", MEASURED, cache_key(cpu))
    return path


def test_the_host_holds_its_own_figure_when_its_cache_was_measured_on_this_cpu(tmp_path: Path) -> None:
    figure = host_figure(cached(tmp_path / CACHE_NAME))
    assert figure == StandIn(123 * MIB, "optimum, transformers and torch, here", MEASURED, True, figure.origin)
    assert figure.origin == f"measured here (2026-12-05, {CACHE_NAME})"


def test_a_cache_from_another_cpu_is_ignored_for_the_committed_figure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        figure = host_figure(cached(tmp_path / CACHE_NAME, cpu="Intel(R) Xeon(R) Platinum 8488C"))
    assert figure == measured_figure() and not figure.measured_here and figure.origin == COMMITTED
    assert len(caplog.records) == 1 and "another CPU" in caplog.records[0].getMessage()


def test_without_a_cache_the_committed_figure_is_held_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        assert host_figure(tmp_path / CACHE_NAME) == measured_figure()
    assert caplog.records == []


def key_json() -> str:
    return f'"key": {{"cpu": "{cache_key()["cpu"]}"}}'


HOSTILE: dict[str, Callable[[], str]] = {
    "not JSON": lambda: "{libraries_bytes: 1",
    "a list": lambda: "[1, 2]",
    "the whole memory": lambda: f'{{{key_json()}, "libraries_bytes": {2**40}, "stands_for": "", "measured": ""}}',
    "negative": lambda: f'{{{key_json()}, "libraries_bytes": -5, "stands_for": "", "measured": ""}}',
    "a bool": lambda: f'{{{key_json()}, "libraries_bytes": true, "stands_for": "", "measured": ""}}',
    "a float": lambda: f'{{{key_json()}, "libraries_bytes": 1e6, "stands_for": "", "measured": ""}}',
    "hundreds of digits": lambda: f'{{{key_json()}, "libraries_bytes": {"9" * 400}, "stands_for": "", "measured": ""}}',
    "no libraries_bytes": lambda: f'{{{key_json()}, "stands_for": "", "measured": ""}}',
    "measured not a string": lambda: f'{{{key_json()}, "libraries_bytes": 1048576, "stands_for": "", "measured": 5}}',
    "nested deep": lambda: "[" * 5000 + "]" * 5000,
    "too big": lambda: f'{{{key_json()}, "pad": "{"x" * 100_000}"}}',
    "not UTF-8": lambda: "\udcff",
}


@pytest.mark.parametrize("what", [*HOSTILE, "a FIFO", "a directory"])
def test_a_malformed_or_hostile_cache_costs_one_log_line_never_the_start(
    what: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    file = tmp_path / CACHE_NAME
    if what == "a FIFO":
        os.mkfifo(file)  # read without blocking: a start never waits on it
    elif what == "a directory":
        file.mkdir()
    else:
        file.write_bytes(HOSTILE[what]().encode("utf-8", "surrogateescape"))
    with caplog.at_level(logging.WARNING):
        figure = host_figure(file)
    assert figure == measured_figure() and not figure.measured_here
    assert len(caplog.records) == 1 and "Ignoring the stand-in cache" in caplog.records[0].getMessage()


def test_the_supervisor_gives_every_incarnation_this_hosts_figure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("app.box.supervisor.MODELS_DIR", tmp_path)
    placement = Placement([0], "affinity", "off", None)
    with socket.socket() as sock:
        supervisor = Supervisor(Settings(box_stand_in=True), "127.0.0.1", 0, placement, sock, None)
        assert supervisor.initial_state().stand_in == measured_figure()  # no cache yet
        cached(tmp_path / CACHE_NAME, 200 * MIB)
        state = supervisor.initial_state()
        off = Supervisor(Settings(box_stand_in=False), "127.0.0.1", 0, placement, sock, None).initial_state()
    assert state.stand_in_bytes == 200 * MIB and state.stand_in is not None and state.stand_in.measured_here
    assert "200 MiB of it held for the seed's libraries (stand-in, measured here (2026-12-05" in summary(state, None)
    assert off.stand_in_bytes == 0 and off.stand_in is None


@pytest.mark.parametrize("here", [True, False])
async def test_stats_and_model_say_whether_the_stand_in_was_measured_here(
    here: bool, lab_client: LabClientFactory, tmp_path: Path
) -> None:
    figure = host_figure(cached(tmp_path / CACHE_NAME, 16 * MIB, cpu=None if here else "another CPU"))
    state = BoxState(memory_cap_bytes=1200 * MIB, memory_mode="cgroup", stand_in_bytes=16 * MIB, stand_in=figure)
    async with lab_client(GatedScorer(gated=False), box_state=state) as client:
        memory = (await client.get("/api/stats")).json()["memory"]
        declared = (await client.get("/api/model")).json()["box"]["stand_in"]
    assert memory["stand_in_measured_here"] is here and declared["measured_here"] is here
    origin = f"measured here (2026-12-05, {CACHE_NAME})" if here else COMMITTED
    assert memory["stand_in_from"] == declared["origin"] == origin
    assert declared["bytes"] == memory["stand_in_bytes"] == 16 * MIB
