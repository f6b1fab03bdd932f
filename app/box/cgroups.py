"""A cgroup of the box's own (cpuset + cpu + memory), v1 or v2, created where the host lets us and removed after.

v1 (one hierarchy per controller): `cpuset.cpus`/`cpuset.mems`, `cpu.cfs_quota_us`,
`memory.limit_in_bytes`, OOM kills in `memory.oom_control`. v2 (one unified folder):
`cpuset.cpus`, `cpu.max`, `memory.max`, OOM kills in `memory.events`. Every step may fail
(not root, no delegation, macOS): then `create` returns None or a group without that controller,
and the caller falls back.
"""

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.inside.cgroup_memory import MemoryFiles

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
CONTROLLERS = ("cpuset", "cpu", "memory")
# Sixteen times a host process's weight: another program on the box's core gets what the box's
# quota leaves, instead of half the core whatever the quota says (the quota alone sets the box's speed).
CPU_WEIGHT_V1 = 16 * 1024  # cpu.shares, default 1024
CPU_WEIGHT_V2 = 16 * 100  # cpu.weight, default 100


def parent_dirs(proc_cgroup: str | None = None, root: Path = CGROUP_ROOT) -> tuple[dict[str, Path], int]:
    """Where this process sits (`proc_cgroup`: /proc/self/cgroup's text, read if None), per controller, and the
    cgroup version: v1 when any v1 controller is named. The one cgroup finder of the box and the benchmarks."""
    proc_cgroup = PROC_CGROUP.read_text() if proc_cgroup is None else proc_cgroup
    v1: dict[str, Path] = {}
    unified: Path | None = None
    for line in proc_cgroup.splitlines():
        _, names, path = line.split(":", 2)
        for name in names.split(","):
            if name in CONTROLLERS:
                v1[name] = root / name / path.lstrip("/")
        if names == "":
            unified = root / path.lstrip("/")
    if v1:
        return v1, 1
    if unified is not None:
        return dict.fromkeys(CONTROLLERS, unified), 2
    return {}, 0


@dataclass
class BoxCgroup:
    """The folders of one box group, per controller (in v2 they are all the same folder)."""

    version: int
    dirs: dict[str, Path] = field(default_factory=dict)

    def has(self, controller: str) -> bool:
        return controller in self.dirs

    def folders(self) -> list[Path]:
        return sorted(set(self.dirs.values()))

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.folders()]

    def pids(self) -> list[int]:
        found: set[int] = set()
        for d in self.folders():
            with contextlib.suppress(OSError):
                found.update(int(p) for p in (d / "cgroup.procs").read_text().split())
        return sorted(found)

    def oom_kills(self) -> int:
        """Processes the kernel killed in this group for want of memory (0 without a readable memory group)."""
        if "memory" not in self.dirs:
            return 0
        with contextlib.suppress(OSError, ValueError):
            return MemoryFiles(self.dirs["memory"], self.version).oom_kills()
        return 0

    def memory_peak(self) -> int:
        """The memory group's highest usage since its last reset (0 without a readable memory group)."""
        if "memory" not in self.dirs:
            return 0
        with contextlib.suppress(OSError, ValueError):
            return MemoryFiles(self.dirs["memory"], self.version).peak_bytes()
        return 0

    def reset_memory_peak(self) -> bool:
        return "memory" in self.dirs and MemoryFiles(self.dirs["memory"], self.version).reset_peak()

    def remove(self) -> None:
        """Kill whatever is left inside (nothing of the box may outlive it), then remove the folders."""
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        for d in self.folders():
            with contextlib.suppress(OSError):
                d.rmdir()


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _v1_setup(controller: str, folder: Path, parent: Path, cpus: list[int], cap: int) -> None:
    if controller == "cpuset":
        _write(folder / "cpuset.cpus", ",".join(map(str, cpus)))
        _write(folder / "cpuset.mems", (parent / "cpuset.mems").read_text().strip())
    elif controller == "cpu" and (folder / "cpu.shares").exists():  # a kernel file: never create one
        with contextlib.suppress(OSError):
            _write(folder / "cpu.shares", str(CPU_WEIGHT_V1))
    elif controller == "memory":
        MemoryFiles(folder, 1).write_limit(cap)
        # Without swap accounting the cap would only push pages to swap; no swap here means no-op.
        with contextlib.suppress(OSError):
            _write(folder / "memory.swappiness", "0")


def _v2_setup(folder: Path, parent: Path, wanted: list[str], cpus: list[int], cap: int) -> list[str]:
    enabled = (parent / "cgroup.controllers").read_text().split()
    usable = [c for c in wanted if c in enabled]
    for c in usable:
        with contextlib.suppress(OSError):
            _write(parent / "cgroup.subtree_control", f"+{c}")
    folder.mkdir()
    active = (folder / "cgroup.controllers").read_text().split() if (folder / "cgroup.controllers").exists() else []
    usable = [c for c in usable if c in active]
    if "cpuset" in usable:
        _write(folder / "cpuset.cpus", ",".join(map(str, cpus)))
    if "cpu" in usable and (folder / "cpu.weight").exists():
        with contextlib.suppress(OSError):
            _write(folder / "cpu.weight", str(CPU_WEIGHT_V2))
    if "memory" in usable:
        MemoryFiles(folder, 2).write_limit(cap)
        with contextlib.suppress(OSError):
            _write(folder / "memory.swap.max", "0")
    return usable


BOX_PREFIX = "lab-box-"  # + the supervisor's pid: each box's group is named after its owner


def box_name(supervisor_pid: int) -> str:
    return f"{BOX_PREFIX}{supervisor_pid}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def sweep_orphans(*, root: Path = CGROUP_ROOT, proc: str | None = None) -> list[Path]:
    """Remove the groups of boxes whose supervisor is dead (kill -9 runs no cleanup); the folders removed.

    A group is named `lab-box-<pid>` after its supervisor: while that pid lives, the group is another
    box's and is left alone. A dead box's server exits with it (parent-death signal), so its groups are
    empty by the time anyone sweeps; whatever is still inside is killed first, as `BoxCgroup.remove` does.
    Runs at every start of a box, before it makes its own group.
    """
    try:
        parents, version = parent_dirs(proc, root)
    except OSError:
        return []
    orphans: dict[Path, BoxCgroup] = {}
    for controller, parent in parents.items():
        with contextlib.suppress(OSError):
            for folder in parent.glob(f"{BOX_PREFIX}*"):
                pid = folder.name.removeprefix(BOX_PREFIX)
                if folder.is_dir() and pid.isdigit() and not _alive(int(pid)):
                    orphans.setdefault(folder, BoxCgroup(version)).dirs[controller] = folder
    removed = []
    for folder, group in sorted(orphans.items()):
        group.remove()
        if not folder.exists():
            removed.append(folder)
    return removed


def wanted_controllers(cpus: list[int], cpu_quota: bool, memory_cap: int) -> list[str]:
    """The controllers the box needs: cpuset for cores, cpu for a quota, memory for a cap."""
    wanted = []
    if cpus:
        wanted.append("cpuset")
    if cpu_quota:
        wanted.append("cpu")
    if memory_cap > 0:
        wanted.append("memory")
    return wanted


def create(
    name: str, cpus: list[int], cpu_quota: bool, memory_cap: int, *, root: Path = CGROUP_ROOT, proc: str | None = None
) -> tuple[BoxCgroup | None, dict[str, str]]:
    """Make the group with every controller the box wants that the host allows; why each one failed."""
    wanted = wanted_controllers(cpus, cpu_quota, memory_cap)
    failures: dict[str, str] = {}
    if not wanted:
        return None, failures
    try:
        parents, version = parent_dirs(proc, root)
    except OSError as err:
        return None, dict.fromkeys(wanted, f"no cgroups here ({err.strerror})")
    if version == 0:
        return None, dict.fromkeys(wanted, "no cgroups here")
    group = BoxCgroup(version)
    if version == 2:
        folder = parents["cpu"] / name
        try:
            usable = _v2_setup(folder, parents["cpu"], wanted, cpus, memory_cap)
        except OSError as err:
            with contextlib.suppress(OSError):
                folder.rmdir()
            return None, dict.fromkeys(wanted, f"cgroup v2 not writable ({err.strerror})")
        group.dirs = dict.fromkeys(usable, folder)
        failures = {c: "controller not delegated" for c in wanted if c not in usable}
        if not usable:
            with contextlib.suppress(OSError):
                folder.rmdir()
            return None, failures
        return group, failures
    for controller in wanted:
        parent = parents.get(controller)
        if parent is None:
            failures[controller] = "controller not mounted"
            continue
        folder = parent / name
        try:
            folder.mkdir()
            _v1_setup(controller, folder, parent, cpus, memory_cap)
        except OSError as err:
            with contextlib.suppress(OSError):
                folder.rmdir()
            failures[controller] = f"not writable ({err.strerror or err})"
            continue
        group.dirs[controller] = folder
    return (group if group.dirs else None), failures
