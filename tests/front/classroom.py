"""`python -m app.front` in a test, as `just classroom` runs it: the tiny model, free ports, every file in a
temporary folder, its output (the front's, the box's and the server's, as the instructor sees them) in one log."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from app.settings import PROJECT_ROOT
from kit.live import TINY_MODEL
from kit.serverproc import free_port
from tests.front_proxy import need_nginx

__all__ = ["Classroom", "alive", "classroom"]

GUARD_S = 180.0  # a failure guard: the box loads the model first


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@dataclass
class Classroom:
    process: "subprocess.Popen[bytes]"
    state: Path
    https_port: int
    box_port: int
    seen: list[psutil.Process] = field(default_factory=list)  # every descendant met, to leave none behind

    @property
    def log_path(self) -> Path:
        return self.state / "front.log"

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, text: str, limit_s: float = GUARD_S) -> None:
        """Until `text` is in the output (polled; the deadline is a failure guard, never a delay)."""
        deadline = time.monotonic() + limit_s
        while text not in self.output():
            assert self.process.poll() is None, self.output()
            assert time.monotonic() < deadline, self.output()
            time.sleep(0.1)

    def family(self) -> list[psutil.Process]:
        found = psutil.Process(self.process.pid).children(recursive=True)
        self.seen += found
        return found

    def nginx(self) -> tuple[psutil.Process, list[psutil.Process]]:
        """nginx's master and its workers."""
        master = next(p for p in self.family() if p.name() == "nginx" and p.ppid() == self.process.pid)
        return master, master.children()

    def server(self) -> psutil.Process:
        """The box's server process (the supervisor's one child)."""
        box = next(p for p in self.family() if "app.box" in " ".join(p.cmdline()))
        (server,) = box.children()
        return server


@contextmanager
def classroom(**settings: str) -> Iterator[Classroom]:
    """Runs the front until the block ends (SIGINT, as Ctrl-C would, if it still runs); kills what is left after."""
    need_nginx()
    state = Path(tempfile.mkdtemp(prefix="lab-classroom-"))
    https_port, box_port = free_port(), free_port()
    env = {
        **os.environ,
        "LAB_MODEL_DIR": str(TINY_MODEL),
        "LAB_JOB_STORE": f"sqlite:///{state}/jobs.db",
        "LAB_KNOBS_FILE": f"{state}/knobs.json",
        "LAB_INSTRUCTOR_TOKEN_FILE": f"{state}/instructor-token",
        "LAB_FRONT_STATE_DIR": str(state / "front"),
        "LAB_HTTPS_PORT": str(https_port),
        "LAB_PORT": str(box_port),
        "LAB_BOX_STAND_IN": "0",
        **settings,
    }
    with (state / "front.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "app.front"], cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    room = Classroom(process, state, https_port, box_port)
    try:
        yield room
    except BaseException:
        sys.stderr.write(room.output()[-6000:])
        raise
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for survivor in (p for p in room.seen if alive(p.pid)):  # only after a failure: leave nothing behind
            survivor.kill()
        shutil.rmtree(state, ignore_errors=True)  # its output went to stderr on a failure
