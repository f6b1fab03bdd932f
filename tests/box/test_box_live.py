"""The real supervisor (`python -m app.box`) around the tiny model: serialized bursts, deaths and restarts."""

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.box.cgroups import CGROUP_ROOT, box_name
from app.inside.stand_in import CACHE_NAME, host_figure
from app.settings import MODELS_DIR
from kit.fire import BurstReply, fire_burst
from kit.live import ROOT, TINY_MODEL, LiveServer
from kit.serverproc import free_port, stop_process, wait_healthy
from tests.waiting import eventually

pytestmark = pytest.mark.slow

# Above the tiny server at rest (~150 MiB), below what 12 concurrent long reviews take (~2.6 GiB, unboxed).
CAP = 320 * 2**20
LONG_REVIEW = "배송이 늦고 포장이 엉망이었어요. " * 90  # ~2,000 characters: the most memory one review can take


class Box(LiveServer):
    """A supervised box: the server record plus the box section of its stats."""

    def stats(self) -> dict[str, Any]:
        box: dict[str, Any] = httpx.get(f"{self.url}/api/stats", timeout=30).json()["box"]
        return box


def leftover_groups(pid: int) -> list[Path]:
    return [p for p in CGROUP_ROOT.glob(f"*/**/{box_name(pid)}") if p.is_dir()] if CGROUP_ROOT.exists() else []


@contextmanager
def boxed(**settings: str) -> Iterator[Box]:
    port = free_port()
    data = tempfile.mkdtemp(prefix="lab-box-data-")
    env = {**os.environ, "LAB_MODEL_DIR": str(TINY_MODEL), "LAB_JOB_STORE": f"sqlite:///{data}/jobs.db"}
    # Never the project's kept knobs or instructor token; the tiny model's mechanisms alone, unless a test asks.
    env |= {"LAB_KNOBS_FILE": f"{data}/knobs.json", "LAB_INSTRUCTOR_TOKEN_FILE": f"{data}/instructor-token"}
    env |= {"LAB_BOX_STAND_IN": "0", **settings}
    log_path = Path(data) / "box.log"
    with log_path.open("wb") as log:
        argv = [sys.executable, "-m", "app.box", "--host", "127.0.0.1", "--port", str(port)]
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    box = Box(f"http://127.0.0.1:{port}", process, log_path)
    try:
        wait_healthy(box.url, process, limit_s=120)
        yield box
    except BaseException:
        sys.stderr.write(box.log())
        raise
    finally:
        stop_process(process, limit_s=60)
    assert leftover_groups(process.pid) == []  # the supervisor removes every group it made


def server_threads_cpus(box: Box) -> set[str]:
    """Cpus_allowed_list of every thread of the supervisor's children (the server)."""
    found = set()
    for child in Path(f"/proc/{box.process.pid}/task/{box.process.pid}/children").read_text().split():
        for task in Path(f"/proc/{child}/task").iterdir():
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    found.add(line.split(":")[1].strip())
    return found


def burst(url: str, path: str, n: int, text: str) -> list[BurstReply]:
    """n reviews at once (status 0: the connection was lost, as when the box dies under it)."""
    replies, _ = asyncio.run(fire_burst(url, path, [f"{text} {i}" for i in range(n)]))
    return replies


def infer_s(replies: list[BurstReply]) -> float:
    """The median inference of the answered reviews, from their Server-Timing."""
    return statistics.median(r.infer_s for r in replies if r.infer_s is not None)


def back_after_a_death(box: Box) -> None:
    """Until the next incarnation serves: its port refuses until it has its fresh socket."""
    wait_healthy(box.url, limit_s=120)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CPU affinity is Linux-only")
def test_a_naive_burst_on_the_box_shares_one_slow_core_and_waits_n_times() -> None:
    """Fallback path (no cgroups): affinity to one core and CPU burning; ratios only."""
    n = 6
    with boxed(LAB_BOX_CGROUPS="0", LAB_BOX_SECONDS_PER_REVIEW="0.3", LAB_MEMORY_CAP_BYTES="0") as box:
        model = httpx.get(f"{box.url}/api/model").json()["box"]
        assert model["cpu_mode"] == "affinity" and model["calibration"]["method"] == "burn"
        assert len(server_threads_cpus(box)) == 1 and "," not in next(iter(server_threads_cpus(box)))
        text = "배송은 빨랐지만 포장이 조금 아쉬웠어요."
        single_s = infer_s(burst(box.url, "limited", 1, text) + burst(box.url, "limited", 1, text))
        naive = burst(box.url, "naive", n, text)
    assert [r.status for r in naive] == [200] * n
    naive_infer_s = infer_s(naive)
    # Sharing one core, each of the n concurrent inferences takes about n single ones.
    assert naive_infer_s >= 0.6 * n * single_s


def test_the_box_dies_at_its_memory_cap_and_comes_back_counted() -> None:
    """With a memory cgroup here (root), the kernel's OOM killer; else the watchdog emulation."""
    with boxed(LAB_MEMORY_CAP_BYTES=str(CAP), LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        assert box.stats()["incarnation"] == 1
        mode = httpx.get(f"{box.url}/api/model").json()["box"]["memory_mode"]
        ticket = httpx.post(f"{box.url}/api/queue/jobs", json={"text": "살아남을 티켓"}).json()["job_id"]
        results = burst(box.url, "naive", 12, LONG_REVIEW)
        assert any(r.status == 0 for r in results)  # the connections the dead box held
        back_after_a_death(box)
        stats = box.stats()
        assert stats["incarnation"] >= 2 and stats["memory_deaths"] >= 1
        assert stats["last_death"]["cause"] == "memory_cap"
        metrics = httpx.get(f"{box.url}/metrics").text
        assert f"review_box_incarnation {float(stats['incarnation'])}" in metrics
        # Tickets live in sqlite, not in the dead process.
        assert httpx.get(f"{box.url}/api/queue/jobs/{ticket}").status_code == 200
    expected = "cgroup" if os.geteuid() == 0 and CGROUP_ROOT.joinpath("memory").exists() else "watchdog"
    assert mode == expected


def test_the_watchdog_emulates_the_cap_where_no_memory_cgroup_can_be_made() -> None:
    with boxed(LAB_BOX_CGROUPS="0", LAB_MEMORY_CAP_BYTES=str(CAP), LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        assert httpx.get(f"{box.url}/api/model").json()["box"]["memory_mode"] == "watchdog"
        burst(box.url, "naive", 12, LONG_REVIEW)
        back_after_a_death(box)
        assert box.stats()["memory_deaths"] >= 1
        assert "watchdog" in (box.stats()["last_death"]["detail"] or "")


def test_the_box_holds_and_declares_the_seed_servers_memory() -> None:
    """What the seed's libraries held at rest is charged to the box from start-up, and said so."""
    held = host_figure(MODELS_DIR / CACHE_NAME)  # this host's own figure where it has one, as the box holds
    figure = held.bytes
    said = f"held for the seed's libraries (stand-in, {held.origin})"

    async def summary_printed() -> bool:  # the supervisor prints its one line once the server answers
        return said in box.log()

    with boxed(LAB_BOX_STAND_IN="1", LAB_BOX_SECONDS_PER_REVIEW="0") as box:
        model = httpx.get(f"{box.url}/api/model").json()["box"]
        memory = httpx.get(f"{box.url}/api/stats").json()["memory"]
        asyncio.run(eventually(summary_printed, limit_s=30))
    assert model["stand_in"]["bytes"] == figure and model["stand_in"]["measured_here"] is held.measured_here
    assert memory["stand_in_measured_here"] is held.measured_here and memory["stand_in_from"] == held.origin
    assert memory["bytes"] >= figure  # the cgroup's charge (or RSS) includes every held page
