"""The front's children die with it: kill -9 of `python -m app.front` must not leave nginx or the box on their ports,
and kill -9 of nginx's master must not leave its worker there either.

nginx runs in a process group of its own (its master leads it, its worker inherits it), so the front stops the
whole group, not just the master it started: a worker whose master was killed is still in it. Were the front
killed too, the next start finds what is left by the pid file nginx keeps in the front's state folder, and stops
it only if it is this lab's nginx for that folder (an nginx process with that folder's error.log open);
anything else on the port is named (app/front/ports.py), never killed.
"""

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from app.box.launch import die_with_parent
from app.datafile import Unreadable, read_bytes
from app.front.ports import describe

__all__ = ["bound_to", "leftover_nginx", "stop_group", "stop_leftover_nginx"]

PID_FILE = "nginx.pid"  # where nginx.conf's `pid` puts it, in the state folder
ERROR_LOG = "error.log"  # every nginx process of the front keeps it open


def bound_to(parent: int) -> Callable[[], None]:
    """A `preexec_fn`: the child gets SIGTERM when `parent` dies (the box drains, nginx stops), even by SIGKILL.

    If the parent died between fork and this call, the signal would never come: the child stops itself.
    """

    def preexec() -> None:
        die_with_parent()
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def members(pgid: int) -> list[psutil.Process]:
    """The live processes of a process group (a zombie waiting for its reaper holds no port)."""
    found = []
    for process in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


def stop_group(process: "subprocess.Popen[bytes]", limit_s: float = 10.0) -> None:
    """SIGTERM to the whole process group `process` leads (nginx: fast shutdown), SIGKILL to whatever of it is
    left after `limit_s`; returns once none of it runs (or the kernel took longer than `limit_s` to kill it)."""
    pgid = process.pid
    signal_group(pgid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=limit_s)
    if not gone(lambda: members(pgid), limit_s) or process.poll() is None:
        signal_group(pgid, signal.SIGKILL)
        process.wait()
        gone(lambda: members(pgid), limit_s)


def gone(running: Callable[[], list[psutil.Process]], limit_s: float) -> bool:
    """True once `running()` finds none, False if some still run after `limit_s`."""
    deadline = time.monotonic() + limit_s
    while running():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def live(processes: list[psutil.Process]) -> list[psutil.Process]:
    found = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
    return found


def leftover_nginx(state_dir: Path) -> list[psutil.Process]:
    """This front's nginx processes still running by the pid file in `state_dir`: the master it names and every
    process of its group or its children, kept only if they are nginx with this folder's error.log open (a pid
    reused by anything else is left alone)."""
    try:
        pid = int(read_bytes(state_dir / PID_FILE, 32).strip() or b"0")
    except (FileNotFoundError, Unreadable, ValueError):
        return []
    if pid <= 1:
        return []
    log_file = os.path.realpath(state_dir / ERROR_LOG)
    candidates: dict[int, psutil.Process] = {p.pid: p for p in members(pid)}
    with contextlib.suppress(psutil.Error):
        master = psutil.Process(pid)
        candidates[pid] = master
        candidates |= {p.pid: p for p in master.children(recursive=True)}
    return [p for p in candidates.values() if ours(p, log_file)]


def ours(process: psutil.Process, log_file: str) -> bool:
    try:  # by what it has open, not by its account: as root, nginx's worker runs as nobody
        return process.name() == "nginx" and any(os.path.realpath(f.path) == log_file for f in process.open_files())
    except psutil.Error:
        return False


def stop_leftover_nginx(state_dir: Path, limit_s: float = 10.0) -> list[str]:
    """Stops this front's nginx left running by a front that was killed with it (SIGTERM, then SIGKILL);
    what was stopped, one description each ([] when nothing was left)."""
    found = leftover_nginx(state_dir)
    stopped = [describe(p.pid) for p in found]
    for process in found:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    if not gone(lambda: live(found), limit_s):
        for process in live(found):
            with contextlib.suppress(psutil.Error):
                process.kill()
        gone(lambda: live(found), limit_s)
    if stopped:
        with contextlib.suppress(OSError):
            (state_dir / PID_FILE).unlink()
    return stopped
