"""What a server says about its box: /api/stats, /api/model and /metrics, inside and outside the box."""

import asyncio
from pathlib import Path

import pytest

from app.settings import BoxState, Settings
from tests.conftest import LabClientFactory
from tests.fakes import GatedScorer


async def test_a_bare_server_says_it_is_not_boxed(lab_client: LabClientFactory) -> None:
    async with lab_client(GatedScorer(gated=False)) as client:
        box = (await client.get("/api/stats")).json()["box"]
        model = (await client.get("/api/model")).json()["box"]
    assert box["boxed"] is False and box["incarnation"] == 1 and box["last_death"] is None
    assert model["cpu_mode"].startswith("not enforced") and model["calibration"] is None


async def test_a_restarted_box_shows_its_incarnation_and_last_death(lab_client: LabClientFactory) -> None:
    state = BoxState(
        incarnation=3,
        deaths=2,
        memory_deaths=2,
        last_death_cause="memory_cap",
        last_death_detail="the kernel's OOM killer killed it at the cgroup's memory cap",
        last_death_at=1_796_044_181.0,
        cpus=[1],
        cpu_mode="cgroup",
        memory_cap_bytes=2**30,
        memory_mode="cgroup",
    )
    async with lab_client(GatedScorer(gated=False), box_state=state) as client:
        box = (await client.get("/api/stats")).json()["box"]
        model = (await client.get("/api/model")).json()["box"]
        metrics = (await client.get("/metrics")).text
    assert box["boxed"] is True and box["incarnation"] == 3 and box["memory_deaths"] == 2
    assert box["last_death"]["cause"] == "memory_cap" and box["last_death"]["at"] == 1_796_044_181.0
    assert model["cpus"] == [1] and model["memory_mode"] == "cgroup"
    assert "review_box_incarnation 3.0" in metrics
    assert 'review_box_deaths{cause="memory_cap"} 2.0' in metrics
    assert 'review_box_last_death_timestamp_seconds{cause="memory_cap"} 1.796044181e+09' in metrics


def test_the_state_travels_as_json_in_one_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    state = BoxState(
        incarnation=2, deaths=1, last_death_cause="signal 9", cpus=[1], cpu_quota_dir="/sys/fs/cgroup/cpu/x"
    )
    monkeypatch.setenv("LAB_BOX_STATE", state.model_dump_json())
    assert Settings().box_state == state
    monkeypatch.delenv("LAB_BOX_STATE")
    assert Settings().box_state is None and Settings().box_slow is False  # outside the box: raw


async def test_stats_show_the_memory_the_cgroup_charges_as_a_share_of_the_cap(
    lab_client: LabClientFactory, tmp_path: Path
) -> None:
    (tmp_path / "memory.usage_in_bytes").write_text(str(900 * 2**20))
    (tmp_path / "memory.stat").write_text(f"total_rss {600 * 2**20}\ntotal_inactive_file {100 * 2**20}\n")
    state = BoxState(memory_cap_bytes=1000 * 2**20, memory_mode="cgroup", memory_dir=str(tmp_path))
    async with lab_client(GatedScorer(gated=False), box_state=state) as client:
        boxed = (await client.get("/api/stats")).json()["memory"]
    async with lab_client(GatedScorer(gated=False)) as client:
        bare = (await client.get("/api/stats")).json()
    # The page cache the kernel drops first (the model file read at start-up) is not the box filling up.
    assert boxed == {
        "bytes": 800 * 2**20,
        "source": "cgroup",
        "cap_bytes": 1000 * 2**20,
        "pct_of_cap": 80.0,
        "lab_bytes": 800 * 2**20,
        "stand_in_bytes": 0,
        "stand_in_measured_here": False,
        "stand_in_from": None,
    }
    assert bare["memory"]["source"] == "rss" and bare["memory"]["bytes"] == bare["process"]["rss_bytes"]
    assert bare["memory"]["pct_of_cap"] is None  # nothing caps a server outside the box


async def test_stats_split_the_memory_into_the_labs_own_and_the_stand_in(
    lab_client: LabClientFactory, tmp_path: Path
) -> None:
    """A student sees how much of the bar is the lab and how much stands for the seed's libraries."""
    (tmp_path / "memory.usage_in_bytes").write_text(str(900 * 2**20))
    (tmp_path / "memory.stat").write_text(f"total_inactive_file {100 * 2**20}\n")
    state = BoxState(memory_cap_bytes=1000 * 2**20, memory_mode="cgroup", memory_dir=str(tmp_path))
    held = state.model_copy(update={"stand_in_bytes": 64 * 2**20})
    async with lab_client(GatedScorer(gated=False), box_state=held) as client:
        memory = (await client.get("/api/stats")).json()["memory"]
    assert memory["bytes"] == 800 * 2**20 and memory["pct_of_cap"] == 80.0  # the total as before
    assert memory["stand_in_bytes"] == 64 * 2**20
    assert memory["lab_bytes"] == (800 - 64) * 2**20


async def test_the_cpu_line_counts_naive_inferences_beside_the_idle_lane(lab_client: LabClientFactory) -> None:
    scorer = GatedScorer()
    async with lab_client(scorer) as client:
        naive = asyncio.create_task(client.post("/api/naive/predict", json={"text": "① 리뷰"}))
        await asyncio.to_thread(scorer.wait_entered)
        stats = (await client.get("/api/stats")).json()
        scorer.open()
        assert (await naive).status_code == 200
    assert stats["lane"]["busy"] is False
    assert stats["cpu"] == {"inferences": 1, "lane": 0, "naive": 1}
