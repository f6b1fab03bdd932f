"""The box's two instructor knobs on fakes: the speed loop re-targets at once, the memory cap is written into a
fake cgroup folder (or reaches the watchdog through the knobs file), below-usage and out-of-bounds caps are
refused in the one error shape, and the supervisor starts the next incarnation with the kept values."""

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from app.box import memory_cap
from app.box.cgroups import BoxCgroup
from app.box.kept import KeptKnobs
from app.box.memory_cap import Watchdog
from app.box.placement import Placement
from app.box.supervisor import Supervisor, with_kept_knobs
from app.errors import InvalidKnob
from app.inside.calibrate import applier
from app.inside.meter import ReviewMeter
from app.inside.speed import Setting, SpeedLoop
from app.knobs.board import KnobBoard
from app.knobs.box import BoxMemory, box_appliers
from app.main import create_app
from app.paths.registry import BOX_TARGET
from app.settings import BoxState, Settings
from tests.box.test_speed import FakeHost, serve_reviews
from tests.fakes import GatedScorer

MIB = 2**20


def quota_folder(tmp_path: Path) -> Path:
    """A fake v1 cpu cgroup folder: what `write_quota` writes."""
    folder = tmp_path / "cpu"
    folder.mkdir()
    (folder / "cpu.cfs_quota_us").write_text("-1")
    (folder / "cpu.cfs_period_us").write_text("100000")
    return folder


def memory_folder(tmp_path: Path, used_mib: int, cap_mib: int, version: int = 1) -> Path:
    """A fake memory cgroup folder charging `used_mib` (plus 10 MiB of page cache it may drop)."""
    folder = tmp_path / "memory"
    folder.mkdir()
    if version == 1:
        (folder / "memory.usage_in_bytes").write_text(str((used_mib + 10) * MIB))
        (folder / "memory.stat").write_text(f"total_inactive_file {10 * MIB}\n")
        (folder / "memory.limit_in_bytes").write_text(str(cap_mib * MIB))
    else:
        (folder / "memory.current").write_text(str((used_mib + 10) * MIB))
        (folder / "memory.stat").write_text(f"inactive_file {10 * MIB}\n")
        (folder / "memory.max").write_text(str(cap_mib * MIB))
    return folder


def test_a_new_target_rescales_the_quota_at_once_and_the_loop_holds_it(tmp_path: Path) -> None:
    host = FakeHost(cpu_s=0.64)
    folder = quota_folder(tmp_path)
    write = applier(str(folder), None)

    def apply(s: Setting) -> None:
        host.apply(s)
        write(s)

    meter = ReviewMeter(host, clock=host.clock, cpu=host.clock)
    speed_file = tmp_path / "speed.json"
    loop = SpeedLoop(Setting("quota", 0.64, 1.0, 0.01), meter, apply, clock=host.clock, save_to=speed_file)
    serve_reviews(loop, meter, host, 20)
    assert (folder / "cpu.cfs_quota_us").read_text() == "64000"
    board = KnobBoard(
        Settings(),
        {BOX_TARGET.setting: (BOX_TARGET, box_appliers(None, loop, None)[0][BOX_TARGET.setting])},
        None,
        "instructor",
    )

    board.turn("box_seconds_per_review", 2.0)
    # The first guess, before a single review at the new target: the fraction scaled by old/new.
    assert (folder / "cpu.cfs_quota_us").read_text() == "32000" and host.fraction == 0.32
    snap = loop.snapshot()
    assert snap["target_s"] == 2.0 and snap["achieved_s"] is None and snap["reviews"] == 0
    assert Setting.load(speed_file) == loop.setting  # the next incarnation starts from it
    changed = host.now
    seen = serve_reviews(loop, meter, host, 60)
    assert all(1.8 <= s <= 2.2 for end, s in seen if end - changed >= 20)
    assert 1.8 <= loop.snapshot()["achieved_s"] <= 2.2

    # Back to half a second: more than a whole core would be needed, so the quota is lifted (the loop says why).
    board.turn("box_seconds_per_review", 0.5)
    assert (folder / "cpu.cfs_quota_us").read_text() == "-1" and loop.setting.fraction == 1.0
    assert loop.setting.min_fraction == 0.02  # 1 ms of a 50 ms period: the quota's legal minimum at 0.5 s


def test_a_new_target_on_a_burning_box_changes_the_padding() -> None:
    host = FakeHost(cpu_s=0.01)
    meter = ReviewMeter(host, clock=host.clock, cpu=host.clock)
    loop = SpeedLoop(Setting("burn", 0.01, 1.0, 0.001), meter, host.apply, clock=host.clock)
    appliers, absent = box_appliers(None, loop, None)
    appliers[BOX_TARGET.setting](4.0)
    assert loop.setting == Setting("burn", 0.0025, 4.0, 0.001) and loop.snapshot()["padding"] == 399.0
    assert set(absent) == {"memory_cap_bytes"}  # outside the box nothing enforces a cap


@pytest.mark.parametrize("version", [1, 2])
def test_the_cap_is_written_into_the_groups_limit_file(tmp_path: Path, version: int) -> None:
    folder = memory_folder(tmp_path, used_mib=500, cap_mib=1200, version=version)
    state = BoxState(memory_cap_bytes=1200 * MIB, memory_mode="cgroup", memory_dir=str(folder))
    BoxMemory(state, lambda: 500 * MIB).retune(700 * MIB)
    limit = folder / ("memory.limit_in_bytes" if version == 1 else "memory.max")
    assert limit.read_text() == str(700 * MIB) and state.memory_cap_bytes == 700 * MIB


def test_a_cap_below_usage_plus_the_margin_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    folder = memory_folder(tmp_path, used_mib=550, cap_mib=1200)
    state = BoxState(memory_cap_bytes=1200 * MIB, memory_mode="cgroup", memory_dir=str(folder))
    with pytest.raises(InvalidKnob, match="uses 550 MiB, so at least 650 MiB"):
        BoxMemory(state, lambda: 550 * MIB).retune(640 * MIB)
    assert (folder / "memory.limit_in_bytes").read_text() == str(1200 * MIB) and state.memory_cap_bytes == 1200 * MIB


def test_a_cap_the_kernel_refuses_is_a_422_not_a_500(tmp_path: Path) -> None:
    state = BoxState(memory_cap_bytes=1200 * MIB, memory_mode="cgroup", memory_dir=str(tmp_path / "gone"))
    with pytest.raises(InvalidKnob, match="kernel refused"):
        BoxMemory(state, lambda: 100 * MIB).retune(700 * MIB)
    assert state.memory_cap_bytes == 1200 * MIB


@pytest.fixture
def boxed_lab(tmp_path: Path) -> Any:
    """`async with boxed_lab(state) as (client, token)`: a lab the supervisor would have started with `state`."""

    @asynccontextmanager
    async def opened(state: BoxState) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
        settings = Settings(
            warmup=False,
            job_store=f"sqlite:///{tmp_path / 'jobs.db'}",
            knobs_file=tmp_path / "knobs.json",
            box_state=state,
            memory_cap_bytes=state.memory_cap_bytes,
        )
        app = create_app(settings, GatedScorer(gated=False))
        async with LifespanManager(app) as manager:
            transport = httpx.ASGITransport(app=manager.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://lab", timeout=30) as client:
                yield client, app.state.lab.knobs.token

    return opened


async def test_turning_the_cap_rewrites_the_group_and_every_view_follows(boxed_lab: Any, tmp_path: Path) -> None:
    folder = memory_folder(tmp_path, used_mib=950, cap_mib=1200)
    state = BoxState(memory_cap_bytes=1200 * MIB, memory_mode="cgroup", memory_dir=str(folder))
    async with boxed_lab(state) as (client, token):
        auth = {"Authorization": f"Bearer {token}"}
        turned = await client.put("/api/knobs/memory_cap_bytes", json={"value": 1100 * MIB}, headers=auth)
        assert turned.status_code == 200, turned.text
        stats = (await client.get("/api/stats")).json()
        model = (await client.get("/api/model")).json()
        metrics = (await client.get("/metrics")).text
        below = await client.put("/api/knobs/memory_cap_bytes", json={"value": 1020 * MIB}, headers=auth)
        above = await client.put("/api/knobs/memory_cap_bytes", json={"value": 2049 * MIB}, headers=auth)
        speed = await client.put("/api/knobs/box_seconds_per_review", json={"value": 2}, headers=auth)
    assert (folder / "memory.limit_in_bytes").read_text() == str(1100 * MIB)
    assert stats["memory"] == {
        "bytes": 950 * MIB,
        "source": "cgroup",
        "cap_bytes": 1100 * MIB,
        "pct_of_cap": 86.4,
        "lab_bytes": 950 * MIB,
        "stand_in_bytes": 0,
        "stand_in_measured_here": False,
        "stand_in_from": None,
    }
    assert stats["knobs"]["last"]["setting"] == "memory_cap_bytes" and stats["knobs"]["version"] == 1
    assert model["box"]["memory_cap_bytes"] == 1100 * MIB
    assert 'review_knob_changes_total{knob="memory_cap_bytes"} 1.0' in metrics
    value = next(line for line in metrics.splitlines() if line.startswith('review_knob_value{knob="memory_cap_bytes"}'))
    assert float(value.split()[-1]) == 1100 * MIB
    for refused, why in ((below, "at least 1050 MiB"), (above, "between 1000 and 2048 MiB; got 2049")):
        assert refused.status_code == 422 and set(refused.json()) == {"error", "detail"}
        assert refused.json()["error"] == "invalid_knob" and why in refused.json()["detail"]
    # A fake scorer is not slowed: no speed loop to re-target, and the answer says so.
    assert speed.status_code == 422 and "host's own speed" in speed.json()["detail"]
    assert (folder / "memory.limit_in_bytes").read_text() == str(1100 * MIB)
    assert json.loads((tmp_path / "knobs.json").read_text())["memory_cap_bytes"] == 1100 * MIB


async def test_a_restarted_server_takes_the_kept_cap_and_keeps_what_it_cannot_turn(
    boxed_lab: Any, tmp_path: Path
) -> None:
    folder = memory_folder(tmp_path, used_mib=300, cap_mib=1200)
    (tmp_path / "knobs.json").write_text(json.dumps({"memory_cap_bytes": 1100 * MIB, "box_seconds_per_review": 2.0}))
    state = BoxState(memory_cap_bytes=1200 * MIB, memory_mode="cgroup", memory_dir=str(folder))
    async with boxed_lab(state) as (client, token):
        stats = (await client.get("/api/stats")).json()
        turned = await client.put(
            "/api/knobs/limited_seats", json={"value": 6}, headers={"Authorization": f"Bearer {token}"}
        )
        assert turned.status_code == 200
    assert stats["memory"]["cap_bytes"] == 1100 * MIB and (folder / "memory.limit_in_bytes").read_text() == str(
        1100 * MIB
    )
    # This server has no speed loop, so it cannot turn the target; the kept target is not lost for a box that can.
    kept = json.loads((tmp_path / "knobs.json").read_text())
    assert (
        kept["box_seconds_per_review"] == 2.0 and kept["memory_cap_bytes"] == 1100 * MIB and kept["limited_seats"] == 6
    )


@pytest.fixture
def sock() -> Iterator[socket.socket]:
    with socket.socket() as unbound:  # the supervisor's listening socket; never bound here
        yield unbound


def test_the_supervisor_starts_the_next_incarnation_with_the_kept_cap_and_target(
    tmp_path: Path, sock: socket.socket
) -> None:
    folder = memory_folder(tmp_path, used_mib=0, cap_mib=1200)
    group = BoxCgroup(1, {"memory": folder})
    placement = Placement([1], "cgroup", "cgroup", group)
    file = tmp_path / "knobs.json"
    settings = Settings(memory_cap_bytes=1200 * MIB, box_seconds_per_review=1.0)
    supervisor = Supervisor(settings, "127.0.0.1", 0, placement, sock, None, KeptKnobs(file))
    state = supervisor.with_kept(supervisor.initial_state())
    assert state.memory_cap_bytes == 1200 * MIB and supervisor.child_env(state)["LAB_BOX_SECONDS_PER_REVIEW"] == "1.0"

    # The instructor turned both during the incarnation; it died; the next one starts with them.
    file.write_text(json.dumps({"memory_cap_bytes": 1100 * MIB, "box_seconds_per_review": 2.5, "limited_seats": 8}))
    state = supervisor.with_kept(state)
    env = supervisor.child_env(state)
    assert (folder / "memory.limit_in_bytes").read_text() == str(1100 * MIB)
    assert BoxState.model_validate_json(env["LAB_BOX_STATE"]).memory_cap_bytes == 1100 * MIB
    assert env["LAB_MEMORY_CAP_BYTES"] == str(1100 * MIB) and env["LAB_BOX_SECONDS_PER_REVIEW"] == "2.5"
    assert env["LAB_KNOBS_FILE"] == str(file)

    # A whole new box (`just serve` again) starts from them too; out-of-bounds entries are ignored, and a
    # kept value never turns on what the environment turned off.
    assert with_kept_knobs(settings, KeptKnobs(file)).memory_cap_bytes == 1100 * MIB
    file.write_text(json.dumps({"memory_cap_bytes": 100, "box_seconds_per_review": 9}))
    assert with_kept_knobs(settings, KeptKnobs(file)).model_dump(
        include={"memory_cap_bytes", "box_seconds_per_review"}
    ) == {
        "memory_cap_bytes": 1200 * MIB,
        "box_seconds_per_review": 1.0,
    }
    file.write_text(json.dumps({"memory_cap_bytes": 1100 * MIB, "box_seconds_per_review": 2.5}))
    off = with_kept_knobs(Settings(memory_cap_bytes=0, box_seconds_per_review=0), KeptKnobs(file))
    assert (off.memory_cap_bytes, off.box_seconds_per_review) == (0, 0)


@pytest.fixture
def rss_of_1100_mib(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The watchdog sees a server of 1100 MiB; the event is set when it would kill it (nothing is killed)."""
    killed = threading.Event()
    monkeypatch.setattr(memory_cap, "tree_rss", lambda _pid: 1100 * MIB)
    monkeypatch.setattr(memory_cap, "kill_tree", lambda _pid: killed.set())
    yield killed


async def test_the_watchdog_takes_a_new_cap_from_the_knobs_file(
    tmp_path: Path, rss_of_1100_mib: threading.Event, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "knobs.json"
    kept = KeptKnobs(file)
    seen = threading.Event()

    def cap_now() -> int:
        seen.set()  # asked after a look at the 1100 MiB server
        return kept.memory_cap(1200 * MIB)

    watchdog = Watchdog(1200 * MIB, every_s=0.01, cap_now=cap_now)
    watchdog.watch(pid=-1)
    try:
        assert await asyncio.to_thread(seen.wait, 10)  # it has looked at 1100 MiB under its 1200 MiB cap
        assert not rss_of_1100_mib.is_set()
        file.write_text(json.dumps({"memory_cap_bytes": 1050 * MIB}))
        assert await asyncio.to_thread(rss_of_1100_mib.wait, 10)
    finally:
        watchdog.stop()
    assert watchdog.fired and watchdog.cap_bytes == 1050 * MIB
