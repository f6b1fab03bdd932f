"""The box as others see it: one line for the instructor, a section of /api/stats and /api/model, and metrics."""

import time
from typing import Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from app.box.state import BoxState

_STARTED = time.monotonic()  # this server's start: the incarnation's uptime


def gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def summary(state: BoxState, calibration: dict[str, Any] | None) -> str:
    """`just serve`'s one line: CPUs, seconds per review (target and achieved), memory cap and how enforced."""
    cpus = (
        f"{len(state.cpus)} CPU (core {','.join(map(str, state.cpus))}, {state.cpu_mode})"
        if state.cpus
        else (f"all CPUs ({state.cpu_mode})")
    )
    if calibration is None or calibration.get("method") is None:
        speed = "host speed (LAB_BOX_SECONDS_PER_REVIEW=0)"
    else:
        speed = (
            f"target {calibration['target_s']:.2f} s/review, achieved {calibration['achieved_s']:.2f} s "
            f"(host {calibration['host_cpu_s']:.3f} s, {calibration['method']})"
        )
    memory = (
        f"memory cap {gib(state.memory_cap_bytes)} ({state.memory_mode})"
        if state.memory_cap_bytes
        else state.memory_mode
    )
    return f"The box: {cpus} · {speed} · {memory} · incarnation {state.incarnation}"


def stats(state: BoxState | None) -> dict[str, Any]:
    """/api/stats' `box`: who this server is among the box's restarts (incarnation 1, no deaths outside the box)."""
    s = state or BoxState()
    return {
        "boxed": state is not None,
        "incarnation": s.incarnation,
        "uptime_s": round(time.monotonic() - _STARTED, 1),
        "deaths": s.deaths,
        "memory_deaths": s.memory_deaths,
        "last_death": None
        if s.last_death_cause is None
        else {"cause": s.last_death_cause, "detail": s.last_death_detail, "at": s.last_death_at},
    }


def model_info(state: BoxState | None, calibration: dict[str, Any] | None) -> dict[str, Any]:
    """/api/model's `box`: how the box holds this server (cores, speed, memory)."""
    s = state or BoxState()
    return {
        "boxed": state is not None,
        "cpus": s.cpus,
        "cpu_mode": s.cpu_mode if state is not None else "not enforced (not started by the box)",
        "memory_cap_bytes": s.memory_cap_bytes,
        "memory_mode": s.memory_mode if state is not None else "not enforced (not started by the box)",
        "calibration": calibration,
    }


class BoxCollector(Collector):
    """Incarnation, uptime and deaths, read at scrape time from the state this server was started with."""

    def __init__(self, state: BoxState | None) -> None:
        self.state = state

    def collect(self) -> Any:
        s = stats(self.state)
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
