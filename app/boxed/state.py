"""What the supervisor tells each server it starts: who it is, how it is boxed, how its predecessor died."""

from pydantic import BaseModel


class BoxState(BaseModel):
    """Passed as JSON in `LAB_BOX_STATE`; `None` in Settings means the server runs outside the box."""

    # 1 for the first server, +1 after each restart.
    incarnation: int = 1
    deaths: int = 0
    # Deaths attributed to the memory cap (the OOM killer or the watchdog).
    memory_deaths: int = 0
    # "memory_cap", "signal 9", "exit 1", ...; None before the first death.
    last_death_cause: str | None = None
    last_death_detail: str | None = None
    # Unix time of the last death (wall clock, so a person can read it).
    last_death_at: float | None = None
    # The dead incarnation's highest memory (its group's peak, or what the watchdog killed it at); None: not known.
    last_death_peak_bytes: int | None = None
    # Cores the server may run on; empty means no limit.
    cpus: list[int] = []
    # How the cores are enforced: cgroup | affinity | not enforced (why).
    cpu_mode: str = "not enforced"
    memory_cap_bytes: int = 0
    # How the cap is enforced: cgroup | watchdog (emulation) | not enforced (why).
    memory_mode: str = "not enforced"
    # The server's own cpu cgroup folder, where calibration writes the CPU quota; None: burn CPU instead.
    cpu_quota_dir: str | None = None
    # The box's memory cgroup folder: /api/stats shows what it charges against the cap; None: RSS.
    memory_dir: str | None = None
    # Bytes the server holds for the seed's server's libraries (app/boxed/stand_in.py); 0: none.
    stand_in_bytes: int = 0
    # Where the speed loop keeps its current setting, so the next incarnation starts from it (app/boxed/speed.py).
    speed_file: str | None = None
