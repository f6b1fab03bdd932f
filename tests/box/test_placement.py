"""Where the box puts its server: core choice, cgroup creation on fake cgroup trees, and each fallback."""

from pathlib import Path

import pytest

from app.box import cgroups
from app.box.cgroups import BoxCgroup, parent_dirs
from app.box.memory_cap import MEMORY_CAP, MemoryEnforcer, death_cause
from app.box.placement import Placement, choose_cores, cpu_mode, memory_mode
from app.box.supervisor import after_death
from app.settings import BoxState

V1_PROC = "4:memory:/process_api/abc\n3:cpuset:/\n1:cpu:/\n2:cpuacct:/\n0::/\n"
V2_PROC = "0::/user.slice/lab\n"


def test_choose_cores_takes_the_highest_numbered_and_zero_means_no_limit() -> None:
    assert choose_cores([0, 1], 1) == [1]
    assert choose_cores([0, 1, 2, 3, 4, 5, 6, 7], 2) == [6, 7]
    assert choose_cores([3, 5], 1) == [5]  # only cores we may use
    assert choose_cores([0, 1], 0) == []
    assert choose_cores([0, 1], 4) == [0, 1]


def test_cpu_mode_prefers_a_cpuset_cgroup_then_affinity_then_says_it_is_not_enforced() -> None:
    group = BoxCgroup(1, {"cpuset": Path("/x")})
    assert cpu_mode([1], group, affinity_ok=True, n_wanted=1) == "cgroup"
    assert cpu_mode([1], BoxCgroup(1, {"memory": Path("/m")}), affinity_ok=True, n_wanted=1) == "affinity"
    assert cpu_mode([1], None, affinity_ok=True, n_wanted=1) == "affinity"
    assert cpu_mode([1], None, affinity_ok=False, n_wanted=1).startswith("not enforced")
    assert cpu_mode([], None, affinity_ok=True, n_wanted=0) == "not enforced (LAB_CPUS=0)"


def test_memory_mode_prefers_the_kernel_then_the_watchdog_emulation() -> None:
    assert memory_mode(100, BoxCgroup(1, {"memory": Path("/m")}), can_watch=True) == "cgroup"
    assert memory_mode(100, None, can_watch=True) == "watchdog"
    assert memory_mode(0, None, can_watch=True) == "not enforced (LAB_MEMORY_CAP_BYTES=0)"


def test_parent_dirs_reads_v1_per_controller_and_v2_unified(tmp_path: Path) -> None:
    parents, version = parent_dirs(V1_PROC, tmp_path)
    assert version == 1
    assert parents["memory"] == tmp_path / "memory" / "process_api" / "abc"
    assert parents["cpuset"] == tmp_path / "cpuset"
    parents, version = parent_dirs(V2_PROC, tmp_path)
    assert version == 2 and parents["cpu"] == tmp_path / "user.slice" / "lab"
    assert parent_dirs("", tmp_path) == ({}, 0)


def fake_v1(root: Path) -> None:
    for folder in ("cpuset", "cpu", "memory/process_api/abc"):
        (root / folder).mkdir(parents=True)
    (root / "cpuset" / "cpuset.mems").write_text("0\n")


def test_create_v1_writes_cores_mems_and_cap_in_each_controller(tmp_path: Path) -> None:
    fake_v1(tmp_path)
    group, failures = cgroups.create("lab-box-t", [1], True, 1000, root=tmp_path, proc=V1_PROC)
    assert failures == {} and group is not None
    assert (tmp_path / "cpuset" / "lab-box-t" / "cpuset.cpus").read_text() == "1"
    assert (tmp_path / "cpuset" / "lab-box-t" / "cpuset.mems").read_text() == "0"
    assert (tmp_path / "memory" / "process_api" / "abc" / "lab-box-t" / "memory.limit_in_bytes").read_text() == "1000"
    assert group.dirs["cpu"] == tmp_path / "cpu" / "lab-box-t"
    placement = Placement([1], "cgroup", "cgroup", group)
    assert placement.quota_dir == str(tmp_path / "cpu" / "lab-box-t")
    assert placement.launch_args().count("--join") == 3 and "--cpus" not in placement.launch_args()
    placement.close()
    assert not (tmp_path / "cpu" / "lab-box-t").exists()


def test_create_v1_without_a_memory_hierarchy_falls_back_for_memory_only(tmp_path: Path) -> None:
    fake_v1(tmp_path)
    (tmp_path / "memory" / "process_api" / "abc").rmdir()
    group, failures = cgroups.create("lab-box-t", [1], False, 1000, root=tmp_path, proc=V1_PROC)
    assert group is not None and group.has("cpuset") and not group.has("memory")
    assert "memory" in failures
    assert memory_mode(1000, group, can_watch=True) == "watchdog"


def test_no_cgroups_at_all_gives_affinity_and_the_watchdog(tmp_path: Path) -> None:
    group, failures = cgroups.create("lab-box-t", [1], True, 1000, root=tmp_path / "absent", proc=V1_PROC)
    assert group is None and set(failures) == {"cpuset", "cpu", "memory"}
    placement = Placement([1], cpu_mode([1], group, True, 1), memory_mode(1000, group, True), group)
    assert placement.launch_args() == ["--cpus", "1"] and placement.quota_dir is None
    assert placement.memory_mode == "watchdog"


def test_nothing_wanted_creates_nothing(tmp_path: Path) -> None:
    assert cgroups.create("lab-box-t", [], False, 0, root=tmp_path, proc=V1_PROC) == (None, {})


def test_create_v2_uses_one_folder_with_only_the_delegated_controllers(tmp_path: Path) -> None:
    parent = tmp_path / "user.slice" / "lab"
    parent.mkdir(parents=True)
    (parent / "cgroup.controllers").write_text("cpu memory\n")
    (parent / "cgroup.subtree_control").write_text("")
    group, failures = cgroups.create("lab-box-t", [1], True, 1000, root=tmp_path, proc=V2_PROC)
    # The fake kernel never fills the new folder's controllers, so nothing is usable: a clean fallback.
    assert group is None and set(failures) == {"cpuset", "cpu", "memory"}
    assert not (parent / "lab-box-t").exists()
    assert (parent / "cgroup.subtree_control").read_text() == "+memory"  # asked the parent to delegate


@pytest.mark.parametrize(
    ("returncode", "ooms", "fired", "cause"),
    [(-9, 1, False, MEMORY_CAP), (-9, 0, True, MEMORY_CAP), (-9, 0, False, "signal 9"), (1, 0, False, "exit 1")],
)
def test_a_death_is_blamed_on_the_cap_only_with_evidence(returncode: int, ooms: int, fired: bool, cause: str) -> None:
    assert death_cause(returncode, ooms, fired)[0] == cause


def memory_group(tmp_path: Path, version: int) -> BoxCgroup:
    folder = tmp_path / "memory" / "box"
    folder.mkdir(parents=True)
    name = "memory.max_usage_in_bytes" if version == 1 else "memory.peak"
    (folder / name).write_text("1200000000\n")
    (folder / ("memory.oom_control" if version == 1 else "memory.events")).write_text("oom_kill 0\n")
    return BoxCgroup(dirs={"memory": folder}, version=version)


@pytest.mark.parametrize("version", [1, 2])
def test_a_dead_incarnations_peak_is_its_own_groups_reset_as_it_started(tmp_path: Path, version: int) -> None:
    """A burst that kills the box ends before the page samples its peak: the box reports the dead one's."""
    group = memory_group(tmp_path, version)
    enforcer = MemoryEnforcer("cgroup", 2**30, group)
    enforcer.start(pid=12345)  # the peak starts afresh with the incarnation (the kernel takes the write of 0)
    peak = group.dirs["memory"] / ("memory.max_usage_in_bytes" if version == 1 else "memory.peak")
    assert peak.read_text() == "0"
    peak.write_text("1288000000\n")  # what the kernel saw before it killed it
    assert enforcer.peak_bytes() == 1288000000
    state = after_death(BoxState(), MEMORY_CAP, "killed", 1.0, enforcer.peak_bytes())
    assert state.last_death_peak_bytes == 1288000000


def test_a_kernel_that_keeps_no_peak_gives_none_not_a_stale_one(tmp_path: Path) -> None:
    group = memory_group(tmp_path, 2)
    (group.dirs["memory"] / "memory.peak").unlink()  # v2 before 5.19: no peak at all
    enforcer = MemoryEnforcer("cgroup", 2**30, group)
    enforcer.start(pid=12345)
    assert enforcer.peak_bytes() is None


def test_the_watchdogs_peak_is_what_it_killed_at() -> None:
    enforcer = MemoryEnforcer("watchdog", 2**30, None)
    assert enforcer.peak_bytes() is None
    assert enforcer.watchdog is not None
    enforcer.watchdog.fired, enforcer.watchdog.killed_at_bytes = True, 1300000000
    assert enforcer.peak_bytes() == 1300000000
