"""The box as others see it: one line for the instructor, a section of /api/stats and /api/model, and metrics."""

import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from app.inside.stand_in import measured_figure
from app.settings import BoxState

_STARTED = time.monotonic()  # this server's start: the incarnation's uptime


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def summary(state: BoxState, speed: dict[str, Any] | None) -> str:
    """`just serve`'s one line: CPUs, seconds per review (target, achieved, how), memory cap and how enforced."""
    cpus = (
        f"{len(state.cpus)} CPU (core {','.join(map(str, state.cpus))}, {state.cpu_mode})"
        if state.cpus
        else (f"all CPUs ({state.cpu_mode})")
    )
    if speed is None:
        pace = "host speed (LAB_BOX_SECONDS_PER_REVIEW=0)"
    else:
        achieved = "none measured yet" if speed["achieved_s"] is None else f"{speed['achieved_s']:.2f} s"
        pace = (
            f"target {speed['target_s']:.2f} s/review, achieved {achieved} "
            f"({speed['method']} {100 * speed['cpu_fraction']:.1f}% of a core, held by a loop; "
            f"first guess {speed['first_guess']})"
        )
    memory = (
        f"memory cap {gib(state.memory_cap_bytes)} ({state.memory_mode})"
        if state.memory_cap_bytes
        else state.memory_mode
    )
    if (declared := stand_in(state)) is not None:
        held = f"{state.stand_in_bytes / 2**20:.0f} MiB of it held for the seed's libraries"
        memory += f", {held} (stand-in, {declared['origin']})"
    return f"The box: {cpus} · {pace} · {memory} · incarnation {state.incarnation}"


def stand_in(state: BoxState | None) -> dict[str, Any] | None:
    """What the box holds for the seed's server, and what that stands for (None: nothing held)."""
    if state is None or not state.stand_in_bytes:
        return None
    figure = state.stand_in or measured_figure()  # a state made without a figure holds the committed one
    return {**figure.as_dict(), "bytes": state.stand_in_bytes}


def stand_in_origin(state: BoxState | None) -> dict[str, Any]:
    """/api/stats' `memory` says whether its stand-in was measured on this host, and where the figure came from."""
    declared = stand_in(state)
    return {
        "stand_in_measured_here": bool(declared and declared["measured_here"]),
        "stand_in_from": None if declared is None else declared["origin"],
    }


def stats(state: BoxState | None, speed: dict[str, Any] | None = None) -> dict[str, Any]:
    """/api/stats' `box`: who this server is among the box's restarts (incarnation 1, no deaths outside the box),
    and its speed loop's one live value (None outside the box)."""
    s = state or BoxState()
    return {
        "speed": speed,
        "boxed": state is not None,
        "incarnation": s.incarnation,
        "uptime_s": round(time.monotonic() - _STARTED, 1),
        "deaths": s.deaths,
        "memory_deaths": s.memory_deaths,
        "last_death": None
        if s.last_death_cause is None
        else {
            "cause": s.last_death_cause,
            "detail": s.last_death_detail,
            "at": s.last_death_at,
            "peak_bytes": s.last_death_peak_bytes,
        },
    }


def model_info(
    state: BoxState | None, calibration: dict[str, Any] | None, speed: dict[str, Any] | None = None
) -> dict[str, Any]:
    """/api/model's `box`: how the box holds this server (cores, speed now, its start-up first guess, memory)."""
    s = state or BoxState()
    return {
        "boxed": state is not None,
        "cpus": s.cpus,
        "cpu_mode": s.cpu_mode if state is not None else "not enforced (not started by the box)",
        "memory_cap_bytes": s.memory_cap_bytes,
        "memory_mode": s.memory_mode if state is not None else "not enforced (not started by the box)",
        "speed": speed,
        "calibration": calibration,
        "stand_in": stand_in(state),
    }


def speed_families(speed: dict[str, Any] | None) -> Iterable[Metric]:
    """The speed loop's value as gauges: the same dict /api/model and /api/stats show."""
    if speed is None:
        return
    yield GaugeMetricFamily(
        "review_box_target_seconds", "Seconds the box aims at per median review.", speed["target_s"]
    )
    if speed["achieved_s"] is not None:
        yield GaugeMetricFamily(
            "review_box_review_seconds",
            "Median seconds of a median-length review alone over the last minute, as measured.",
            speed["achieved_s"],
        )
    method = GaugeMetricFamily(
        "review_box_cpu_fraction", "Share of one core the speed loop gives the box now, by method.", labels=["method"]
    )
    method.add_metric([speed["method"]], speed["cpu_fraction"])
    yield method


class BoxCollector(Collector):
    """Incarnation, uptime and deaths, read at scrape time from the state this server was started with."""

    def __init__(self, state: BoxState | None, speed: Callable[[], dict[str, Any] | None] = lambda: None) -> None:
        self.state = state
        self.speed = speed

    def collect(self) -> Any:
        s = stats(self.state)
        yield from speed_families(self.speed())
        yield GaugeMetricFamily(
            "review_box_incarnation", "Which restart of the box this server is (1 = first).", s["incarnation"]
        )
        yield GaugeMetricFamily(
            "review_box_uptime_seconds", "Seconds since this incarnation of the box started.", s["uptime_s"]
        )
        deaths = GaugeMetricFamily(
            "review_box_deaths", "Times the box died before this incarnation, by cause.", labels=["cause"]
        )
        state = self.state or BoxState()
        deaths.add_metric(["memory_cap"], state.memory_deaths)
        deaths.add_metric(["other"], state.deaths - state.memory_deaths)
        yield deaths
        last = GaugeMetricFamily(
            "review_box_last_death_timestamp_seconds", "Unix time of the box's last death, by cause.", labels=["cause"]
        )
        if state.last_death_at is not None:
            last.add_metric(["memory_cap" if state.last_death_cause == "memory_cap" else "other"], state.last_death_at)
        yield last
