"""A lab server under a real memory limit: a child memory cgroup of our own, for it alone.

Its files are read as the box reads its own (`MemoryFiles`, app/box/cgroups.py), v1 or v2.
The server joins the group before it execs (so the model load is charged too), and the
group is removed afterwards. Needs root (or a delegated cgroup). The instructor's box
applies the same cap with `systemd-run --scope -p MemoryMax=1.2G …` or `docker run --memory=1.2g`.
"""

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType

from app.box.cgroups import PROC_CGROUP, parent_dirs
from app.inside.cgroup_memory import MemoryFiles
from app.settings import PROJECT_ROOT
from kit.serverproc import free_port, wait_healthy


def own_memory_cgroup() -> tuple[Path, int]:
    """This process's memory cgroup folder and its cgroup version, found as the box finds its own."""
    dirs, version = parent_dirs()
    if "memory" not in dirs:
        raise RuntimeError(f"no memory cgroup found in {PROC_CGROUP}")
    return dirs["memory"], version


class MemoryCgroup(MemoryFiles):
    """`with MemoryCgroup(limit) as group:` a fresh child group; `group.peak_bytes()` after the run."""

    def __init__(self, limit_bytes: int, name: str | None = None) -> None:
        parent, version = own_memory_cgroup()
        super().__init__(parent / (name or f"lab-memcap-{os.getpid()}"), version)
        self.limit_bytes = limit_bytes

    def __enter__(self) -> "MemoryCgroup":
        self.folder.mkdir()
        self.write_limit(self.limit_bytes)
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        for pid in self.pids():  # nothing of ours may outlive the group
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        self.folder.rmdir()

    @property
    def procs_file(self) -> Path:
        return self.folder / "cgroup.procs"

    def pids(self) -> list[int]:
        return [int(p) for p in self.procs_file.read_text().split()]


class CappedServer:
    """A uvicorn lab server that runs inside `group` from its first instruction."""

    def __init__(self, group: MemoryCgroup, model_dir: Path, log_path: Path, **settings: str) -> None:
        self.group = group
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._env = {**os.environ, "LAB_MODEL_DIR": str(model_dir), **settings}
        self._log_path = log_path
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> "CappedServer":
        uvicorn = [sys.executable, "-m", "uvicorn", "app.main:app", "--host", "127.0.0.1", "--port", str(self.port)]
        uvicorn += ["--no-access-log", "--log-level", "warning", "--timeout-graceful-shutdown", "30"]
        join_then_exec = f"echo $$ > {shlex.quote(str(self.group.procs_file))} && exec {shlex.join(uvicorn)}"
        with self._log_path.open("wb") as log:
            self.process = subprocess.Popen(
                ["sh", "-c", join_then_exec], cwd=PROJECT_ROOT, env=self._env, stdout=log, stderr=subprocess.STDOUT
            )
        wait_healthy(self.url, self.process, limit_s=180)
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def stop(self) -> int | None:
        """SIGTERM (uvicorn's graceful shutdown), SIGKILL only if it hangs; the exit code."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode
