"""Memory the box holds for the seed's server: resident, given back on close, declared where the box is described."""

import psutil

from app.boxed.report import model_info, stand_in, summary
from app.boxed.stand_in import HeldMemory, measured_figure
from app.boxed.state import BoxState

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
