"""Where the box's server runs: which cores, in which cgroup, or under which affinity, and how that was decided."""

import os
import sys
from collections.abc import Collection
from dataclasses import dataclass, field

from app.box import cgroups
from app.box.cgroups import BoxCgroup


def choose_cores(allowed: Collection[int], n: int) -> list[int]:
    """The `n` highest-numbered allowed cores (core 0 takes most interrupts); [] = no limit (n <= 0 or too few)."""
    if n <= 0 or n >= len(allowed):
        return [] if n <= 0 else sorted(allowed)
    return sorted(allowed)[-n:]


def allowed_cores() -> list[int]:
    """The cores this process may use (all of them where affinity does not exist, e.g. macOS)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def affinity_works() -> bool:
    return hasattr(os, "sched_setaffinity") and sys.platform.startswith("linux")


def cpu_mode(cores: list[int], group: BoxCgroup | None, affinity_ok: bool, n_wanted: int) -> str:
    """How the cores are held: a cpuset cgroup, else affinity (inherited by every thread), else not at all."""
    if n_wanted <= 0:
        return "not enforced (LAB_CPUS=0)"
    if not cores:
        return "not enforced (fewer cores than asked)"
    if group is not None and group.has("cpuset"):
        return "cgroup"
    if affinity_ok:
        return "affinity"
    return "not enforced (no cgroup, no CPU affinity on this OS)"


def memory_mode(cap: int, group: BoxCgroup | None, can_watch: bool) -> str:
    """The kernel's OOM killer in a memory cgroup, else a watchdog that SIGKILLs at the cap (an emulation)."""
    if cap <= 0:
        return "not enforced (LAB_MEMORY_CAP_BYTES=0)"
    if group is not None and group.has("memory"):
        return "cgroup"
    if can_watch:
        return "watchdog"
    return "not enforced (cannot read process memory)"


@dataclass
class Placement:
    cores: list[int]
    cpu_mode: str
    memory_mode: str
    group: BoxCgroup | None
    # Why a controller could not be used (logged, so the instructor sees the fallback's reason).
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def quota_dir(self) -> str | None:
        if self.group is None or not self.group.has("cpu"):
            return None
        return str(self.group.dirs["cpu"])

    @property
    def memory_dir(self) -> str | None:
        if self.memory_mode != "cgroup" or self.group is None or not self.group.has("memory"):
            return None
        return str(self.group.dirs["memory"])

    def launch_args(self) -> list[str]:
        """Arguments for `app.box.launch`: the groups to join and the cores to pin before exec."""
        args: list[str] = []
        if self.group is not None:
            for procs in self.group.procs_files():
                args += ["--join", procs]
        if self.cpu_mode == "affinity":
            args += ["--cpus", ",".join(map(str, self.cores))]
        return args

    def close(self) -> None:
        if self.group is not None:
            self.group.remove()


def place(n_cpus: int, slow: bool, memory_cap: int, name: str, use_cgroups: bool = True) -> Placement:
    """Try a cgroup with what the box needs; fall back to affinity and the watchdog for what it could not get."""
    cores = choose_cores(allowed_cores(), n_cpus)
    group: BoxCgroup | None = None
    failures: dict[str, str]
    if not sys.platform.startswith("linux"):
        failures = {"any controller": f"no cgroups on {sys.platform}"}
    elif not use_cgroups:
        failures = {"any controller": "LAB_BOX_CGROUPS=0"}
    else:
        group, failures = cgroups.create(name, cores, slow, memory_cap)
    return Placement(
        cores=cores,
        cpu_mode=cpu_mode(cores, group, affinity_works(), n_cpus),
        memory_mode=memory_mode(memory_cap, group, can_watch=True),
        group=group,
        failures=failures,
    )
