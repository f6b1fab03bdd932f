"""How the box starts one server: the uvicorn command line, and a tiny pre-exec step that boxes the process.

`python -m app.box.launch --join /sys/fs/cgroup/…/cgroup.procs --cpus 1 -- <argv>` joins the
groups and pins the cores *before* exec, so the model load is charged to the cap and every
thread the server ever starts (thread pool, lane, onnxruntime, ticket worker) inherits the core.
"""

import argparse
import os
import signal
import subprocess
import sys


def server_argv(host: str, port: int, fd: int | None) -> list[str]:
    """The one place that says how the server is started. With `fd`, the server serves the box's own socket.

    `python -m app.serve` is uvicorn with the lab's drain on SIGTERM and its slow-client guard; it reads
    the grace period (LAB_SHUTDOWN_GRACE_S) from the settings and keeps the access log off.
    """
    argv = [sys.executable, "-m", "app.serve"]
    argv += ["--fd", str(fd)] if fd is not None else ["--host", host, "--port", str(port)]
    return argv


def die_with_parent() -> None:
    """Linux: SIGTERM this process when the supervisor dies, so no orphan server keeps the port or the group."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


def main(args: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--join", action="append", default=[], help="a cgroup.procs file to join")
    parser.add_argument("--cpus", default="", help="cores to pin, e.g. 1 or 0,1")
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    ns = parser.parse_args(args)
    argv = ns.argv[1:] if ns.argv[:1] == ["--"] else ns.argv
    die_with_parent()
    for procs in ns.join:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    if ns.cpus:
        os.sched_setaffinity(0, {int(c) for c in ns.cpus.split(",")})
    os.execv(argv[0], argv)


def stop_process(process: "subprocess.Popen[bytes]", limit_s: float = 30.0) -> None:
    """SIGTERM (a graceful shutdown), then SIGKILL if it does not exit in time."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


if __name__ == "__main__":
    main()
