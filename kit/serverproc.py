"""A lab server in a subprocess for benchmarks: started fresh, stopped cleanly, bare or inside the box.

Bare (`box=False`) is a plain uvicorn at the host's full speed on every core: for what must compare
at host speed (the peer benchmark pins its own core). With `box=True` it is `python -m app.box`, the
supervisor `just serve` runs (docs/box.md): one core, ~1 s per median review by a CPU quota, the
1.2 GiB cap and a restart after a death, so a benchmark measures what a student's box does.
"""

import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

import httpx
import psutil

from app.box.cgroups import CGROUP_ROOT, BoxCgroup, box_name, parent_dirs
from app.box.launch import stop_process as stop_process  # the kit's callers stop servers with it too
from app.settings import PROJECT_ROOT


class ServerProcess:
    """`with ServerProcess(model_dir, box=True, LAB_X="1") as server:` → `server.url`, `server.pid`.

    In the box, `pid` is the supervisor's; the server itself is its child (a new one after each death),
    so memory is read from `server_pids()`.
    """

    def __init__(self, model_dir: Path, box: bool = False, **settings: str) -> None:
        # Tickets in a sqlite file of its own, removed afterwards: no run sees another's jobs.
        self._data_dir = tempfile.mkdtemp(prefix="lab-bench-data-")
        store = f"sqlite:///{self._data_dir}/jobs.db"
        self._env = {**os.environ, "LAB_MODEL_DIR": str(model_dir), "LAB_JOB_STORE": store, **settings}
        self.box = box
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def server_pids(self) -> list[int]:
        """The processes that serve: the uvicorn itself, or everything under the box's supervisor."""
        if not self.box:
            return [self.pid]
        try:
            return [p.pid for p in psutil.Process(self.pid).children(recursive=True)]
        except psutil.Error:
            return []

    def __enter__(self) -> "ServerProcess":
        if self.box:  # calibration times the median review before /health answers: allow for it
            command = [sys.executable, "-m", "app.box", "--host", "127.0.0.1", "--port", str(self.port)]
        else:
            command = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(self.port)]
            command += ["--no-access-log", "--log-level", "warning"]
        # The server's lines go to stderr: a benchmark's stdout is its data (JSON lines), and the box prints there.
        self._process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=self._env, stdout=sys.stderr)
        wait_healthy(self.url, self._process, limit_s=300 if self.box else 120)
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        if self._process is not None:
            stop_process(self._process, limit_s=60 if self.box else 30)
            if self.box:
                remove_box_groups(self._process.pid)
        shutil.rmtree(self._data_dir, ignore_errors=True)


def box_groups(supervisor_pid: int, proc_cgroup: str | None = None, root: Path = CGROUP_ROOT) -> BoxCgroup | None:
    """The cgroup folders a supervisor started from this process names `lab-box-<pid>`, where they still exist."""
    dirs, version = parent_dirs(proc_cgroup, root)
    left = {c: d / box_name(supervisor_pid) for c, d in dirs.items() if (d / box_name(supervisor_pid)).is_dir()}
    return BoxCgroup(version, left) if left else None


def remove_box_groups(supervisor_pid: int) -> None:
    """The supervisor removes its groups on SIGTERM; if it was SIGKILLed instead, do it here (kill, then rmdir)."""
    try:
        group = box_groups(supervisor_pid)
    except OSError:  # no cgroups on this host: nothing can be left
        return
    if group is not None:
        group.remove()


EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST_PORT = 10_000


def free_port() -> int:
    """A port free now, below the kernel's ephemeral range where it can: a port from bind(0) comes from that
    range, and any outgoing connection (another test's client, on another xdist worker) may take it as its
    own local port before the server binds it; below the range only a listener can."""
    try:
        first_ephemeral = int(EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = 0
    rng = random.SystemRandom()
    for _ in range(100 if first_ephemeral > LOWEST_PORT + 1000 else 0):
        port = rng.randrange(LOWEST_PORT, first_ephemeral)
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found


def wait_healthy(
    url: str,
    process: "subprocess.Popen[bytes] | None" = None,
    limit_s: float = 60.0,
    probe: str = "/health",
    *,
    verify: bool = True,
) -> float:
    """Poll `url + probe` until it answers 200: a server starting, or the box back after a death (through the
    front too: `verify=False` for its certificate, its 502 while the box is down is not an answer). Returns the
    seconds it took; fails at once if `process` died, and with TimeoutError after `limit_s`.

    The one "wait until the box answers" of the measuring side and the live tests."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            if httpx.get(f"{url}{probe}", verify=verify, timeout=5).status_code == 200:
                return time.monotonic() - started
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url}{probe} never answered 200 in {limit_s:g} s")
