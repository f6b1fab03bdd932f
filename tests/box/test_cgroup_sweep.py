"""A box killed with kill -9 runs no cleanup: the next box's start removes the groups it left, and only those."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.box.cgroups import CGROUP_ROOT, sweep_orphans
from kit.live import ROOT, TINY_MODEL
from kit.serverproc import free_port, wait_healthy
from tests.box.test_box_live import boxed, leftover_groups
from tests.box.test_placement import V1_PROC, V2_PROC, fake_v1


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", ""])
    process.wait()
    return process.pid


def test_groups_of_dead_boxes_are_removed_in_every_controller(tmp_path: Path) -> None:
    fake_v1(tmp_path)
    parents = [tmp_path / "cpuset", tmp_path / "cpu", tmp_path / "memory" / "process_api" / "abc"]
    dead, alive = dead_pid(), os.getpid()
    for parent in parents:
        for name in (f"lab-box-{dead}", f"lab-box-{alive}", "lab-box-x", "someone-else"):
            (parent / name).mkdir()
    removed = sweep_orphans(root=tmp_path, proc=V1_PROC)
    assert sorted(removed) == sorted(parent / f"lab-box-{dead}" for parent in parents)
    for parent in parents:  # a live box's group, and anything not named like a box's, are not ours to remove
        assert sorted(p.name for p in parent.iterdir() if p.is_dir()) == sorted(
            [f"lab-box-{alive}", "lab-box-x", "someone-else"]
        )


def test_v2_sweeps_the_one_folder(tmp_path: Path) -> None:
    parent = tmp_path / "user.slice" / "lab"
    dead = dead_pid()
    (parent / f"lab-box-{dead}").mkdir(parents=True)
    assert sweep_orphans(root=tmp_path, proc=V2_PROC) == [parent / f"lab-box-{dead}"]


def test_no_cgroups_here_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep_orphans(root=tmp_path / "absent", proc=V1_PROC) == []


@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or not CGROUP_ROOT.joinpath("memory").exists(), reason="needs root and a v1 memory hierarchy"
)
def test_after_kill_9_of_the_supervisor_the_next_box_removes_its_groups(tmp_path: Path) -> None:
    """kill -9 runs no cleanup, so the groups it leaves are removed by the next box's start.

    Any box's start sweeps every dead box's groups: under xdist a box started by another worker may be the
    one that sweeps these, so the test holds the outcome (nothing left once a box has started), not which
    box's log says so.
    """
    settings = {"LAB_MODEL_DIR": str(TINY_MODEL), "LAB_JOB_STORE": "memory://", "LAB_BOX_SECONDS_PER_REVIEW": "0"}
    port = free_port()
    argv = [sys.executable, "-m", "app.box", "--host", "127.0.0.1", "--port", str(port)]
    with (tmp_path / "killed.log").open("wb") as log:
        killed = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, **settings}, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", killed, limit_s=120)
        assert leftover_groups(killed.pid)  # the precondition: it made groups
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert leftover_groups(killed.pid), "kill -9 ran a cleanup after all: nothing left to test"
    with boxed(LAB_BOX_SECONDS_PER_REVIEW="0", LAB_JOB_STORE="memory://"):
        left = leftover_groups(killed.pid)
    assert left == []
