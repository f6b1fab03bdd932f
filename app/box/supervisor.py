"""Run the lab server inside the box and bring it back after a death, as a container's restart policy would.

The supervisor binds each incarnation's socket itself and hands it to the server (`uvicorn --fd`),
bound but not listening until the server's start-up is over (app/box/port.py): a client that comes
while an incarnation loads its model is refused at once (a front answers it 502), as by a crashed
server behind a proxy, instead of waiting in a backlog that would reach the new incarnation as one
crowd and kill it again. A death closes the socket, as a real crashed process's would: the
connections queued for the dead incarnation are reset at once instead of being handed to the next
one (a death spiral); each incarnation gets a fresh socket, bound just before it starts.
SIGINT/SIGTERM are forwarded once to the server (its graceful shutdown) and end the loop.
The instructor's token is drawn once, into a private file every incarnation reads (app/knobs/instructor.py),
so the /instructor address printed at start-up works for the whole lesson.
"""

import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

import httpx

from app.box.cgroups import box_name, sweep_orphans
from app.box.kept import KeptKnobs, knobs_file
from app.box.launch import server_argv
from app.box.memory_cap import MEMORY_CAP, MemoryEnforcer
from app.box.placement import Placement, place
from app.box.port import bound_socket, claim_port
from app.inside.cgroup_memory import write_memory_limit
from app.inside.report import summary
from app.inside.stand_in import CACHE_NAME, host_figure
from app.knobs.instructor import TOKEN_FILE, TokenFileRefused, lesson_token
from app.settings import MODELS_DIR, PROJECT_ROOT, BoxState, Settings

log = logging.getLogger("app.box")

QUICK_DEATH_S = 10.0  # a server that dies sooner than this is restarted after a growing pause
MAX_BACKOFF_S = 30.0


def next_backoff(previous_s: float, lived_s: float) -> float:
    """0 after a server that lived a while; 1, 2, 4 … 30 s after servers that keep dying at once."""
    if lived_s >= QUICK_DEATH_S:
        return 0.0
    return min(MAX_BACKOFF_S, max(1.0, 2 * previous_s))


def after_death(state: BoxState, cause: str, detail: str, at: float, peak_bytes: int | None = None) -> BoxState:
    return state.model_copy(
        update={
            "incarnation": state.incarnation + 1,
            "deaths": state.deaths + 1,
            "memory_deaths": state.memory_deaths + (cause == MEMORY_CAP),
            "last_death_cause": cause,
            "last_death_detail": detail,
            "last_death_at": at,
            "last_death_peak_bytes": peak_bytes,
        }
    )


@dataclass
class Supervisor:
    settings: Settings
    host: str
    port: int
    placement: Placement
    sock: socket.socket
    # The box's own folder (removed on exit): the speed loop's setting lives here between incarnations.
    state_dir: str | None = None
    # The instructor's kept target and cap (app/box/kept.py): each incarnation starts with them.
    kept: KeptKnobs = field(default_factory=lambda: KeptKnobs(knobs_file()))
    # The lesson's instructor token and the file each incarnation reads it from.
    token: str = ""
    token_file: Path | None = None
    stopping: bool = False
    child: "subprocess.Popen[bytes] | None" = None

    def initial_state(self) -> BoxState:
        # Chosen once for every incarnation: this host's measured figure if it has one (`just bench-stand-in`).
        figure = host_figure(MODELS_DIR / CACHE_NAME) if self.settings.box_stand_in else None
        return BoxState(
            cpus=self.placement.cores,
            cpu_mode=self.placement.cpu_mode,
            memory_cap_bytes=max(self.settings.memory_cap_bytes, 0),
            memory_mode=self.placement.memory_mode,
            cpu_quota_dir=self.placement.quota_dir,
            memory_dir=self.placement.memory_dir,
            speed_file=None if self.state_dir is None else os.path.join(self.state_dir, "speed.json"),
            stand_in_bytes=figure.bytes if figure is not None else 0,
            stand_in=figure,
        )

    def with_kept(self, state: BoxState) -> BoxState:
        """The next incarnation's state with the instructor's kept cap, written into the box's memory group
        too (empty between incarnations, so any cap within the knob's bounds is taken)."""
        cap = self.kept.memory_cap(self.settings.memory_cap_bytes)
        folder = self.placement.memory_dir
        if folder is not None and cap > 0:
            try:
                write_memory_limit(Path(folder), cap)
            except OSError as err:
                log.warning("Cannot set the box's memory cap to %d bytes: %s.", cap, err.strerror or err)
                return state
        return state.model_copy(update={"memory_cap_bytes": max(cap, 0)})

    def child_env(self, state: BoxState) -> dict[str, str]:
        target = self.kept.target_s(self.settings.box_seconds_per_review)
        lesson = self.settings.lesson_file or (None if self.state_dir is None else Path(self.state_dir) / "lesson.db")
        return {
            **os.environ,
            "LAB_BOX_STATE": state.model_dump_json(),
            "LAB_BOX_SLOW": "1" if target > 0 else "0",
            # The instructor's knobs outlive a restart of the server (app/knobs/board.py), the box's two included.
            "LAB_KNOBS_FILE": str(self.kept.file),
            "LAB_BOX_SECONDS_PER_REVIEW": str(target),
            "LAB_MEMORY_CAP_BYTES": str(state.memory_cap_bytes),
            **({"LAB_INSTRUCTOR_TOKEN_FILE": str(self.token_file)} if self.token_file is not None else {}),
            # Every incarnation keeps the class view's record in one file: LAB_LESSON_FILE, else the box's own folder.
            **({"LAB_LESSON_FILE": str(lesson)} if lesson is not None else {}),
        }

    def spawn(self, state: BoxState) -> "subprocess.Popen[bytes]":
        env = self.child_env(state)
        argv = [sys.executable, "-m", "app.box.launch", *self.placement.launch_args(), "--"]
        argv += server_argv(self.host, self.port, self.sock.fileno())
        # Its own session: a terminal's Ctrl-C reaches the supervisor only, which forwards it exactly once.
        return subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, pass_fds=(self.sock.fileno(),), start_new_session=True)

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.stopping = True
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signum)

    def announce(self, child: "subprocess.Popen[bytes]", state: BoxState) -> None:
        """Once the server answers /health: what the box is and the instructor page (the front prints both itself),
        or one line saying it is back, with the address people use (LAB_CLASS_URL behind the front) and the page."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else self.host
        url = f"http://{host}:{self.port}"
        address = self.settings.class_url or url
        page = f"{address}/instructor?token={self.token}" if self.token else ""
        while child.poll() is None and not self.stopping:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    if state.incarnation > 1:
                        back = f"The box is back (incarnation {state.incarnation}): {address}"
                        print(f"{back} · instructor page {page}" if page else back, flush=True)
                        return
                    box = httpx.get(f"{url}/api/model", timeout=5).json().get("box", {})
                    line = summary(state, box.get("speed"))
                    print(line if self.settings.class_url else f"{url}  {line}", flush=True)
                    if page and not self.settings.class_url:
                        why = "the knobs, for the whole lesson; keep it from students"
                        print(f"Instructor page: {page} ({why})", flush=True)
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)

    def run(self) -> int:
        state = self.initial_state()
        default_cap = self.settings.memory_cap_bytes
        memory = MemoryEnforcer(
            self.placement.memory_mode, default_cap, self.placement.group, lambda: self.kept.memory_cap(default_cap)
        )
        backoff = 0.0
        while True:
            started = time.monotonic()
            state = self.with_kept(state)
            self.child = self.spawn(state)
            memory.start(self.child.pid)
            threading.Thread(target=self.announce, args=(self.child, state), name="box-announce", daemon=True).start()
            returncode = self.child.wait()
            self.sock.close()  # resets whoever still waits in the dead incarnation's backlog
            if self.stopping:
                memory.stop()
                return returncode
            cause, detail = memory.cause(returncode)
            state = after_death(state, cause, detail, time.time(), memory.peak_bytes())
            backoff = next_backoff(backoff, time.monotonic() - started)
            log.error(
                "The box died (%s: %s). Restarting as incarnation %d%s.",
                cause,
                detail,
                state.incarnation,
                f" in {backoff:.0f} s" if backoff else "",
            )
            deadline = time.monotonic() + backoff
            while not self.stopping and time.monotonic() < deadline:
                time.sleep(0.1)
            if self.stopping:
                return returncode
            self.sock = bound_socket(self.host, self.port)  # refuses until the next incarnation serves


def with_kept_knobs(settings: Settings, kept: KeptKnobs) -> Settings:
    """The box as the instructor last left it: kept target and cap over the environment's."""
    update = {
        "box_seconds_per_review": kept.target_s(settings.box_seconds_per_review),
        "memory_cap_bytes": kept.memory_cap(settings.memory_cap_bytes),
    }
    return settings.model_copy(update=update)


def serve(host: str, port: int, settings: Settings | None = None) -> int:
    settings = settings or Settings()
    try:
        port_lock, sock = claim_port(host, port)
    except OSError as err:  # most often another box or server on the port: one line, not a traceback
        log.error("Cannot listen on %s:%d: %s.", host, port, err.strerror or err)
        return 1
    state_dir = tempfile.mkdtemp(prefix="lab-box-")
    try:
        token_file, token = lesson_token(settings.instructor_token_file or TOKEN_FILE, Path(state_dir))
    except TokenFileRefused as err:  # someone's file in its place: one line, and nothing started
        log.error("%s", err)
        sock.close()
        shutil.rmtree(state_dir, ignore_errors=True)
        return 2
    if settings.box_cgroups:
        for folder in sweep_orphans():
            log.info("Removed %s, left by a box that was killed.", folder)
    kept = KeptKnobs(knobs_file())
    settings = with_kept_knobs(settings, kept)
    slow = settings.box_seconds_per_review > 0
    placement = place(settings.cpus, slow, settings.memory_cap_bytes, box_name(os.getpid()), settings.box_cgroups)
    for controller, why in placement.failures.items():
        log.warning("No %s cgroup (%s): falling back.", controller, why)
    supervisor = Supervisor(settings, host, port, placement, sock, state_dir, kept, token, token_file)
    signal.signal(signal.SIGINT, supervisor.on_signal)
    signal.signal(signal.SIGTERM, supervisor.on_signal)
    try:
        return supervisor.run()
    finally:
        placement.close()
        supervisor.sock.close()
        os.close(port_lock)
        shutil.rmtree(state_dir, ignore_errors=True)
