"""Measure what slow and silent clients do to a server: `python -m tools.slow_clients --launcher serve`.

Starts the lab (tiny model) under an open-file limit, opens N sockets (half send the start of a
request line, half nothing), asks /health meanwhile, and reports when the server closed them.
`--launcher uvicorn -- --limit-concurrency 1000` measures plain uvicorn with its own options.
"""

import argparse
import os
import resource
import socket
import subprocess
import sys
import time

import httpx

from app.settings import PROJECT_ROOT
from kit.serverproc import free_port, stop_process, wait_healthy
from kit.sockets import closed_times

TINY_MODEL = PROJECT_ROOT / "tests" / "assets" / "tiny-reranker"


def start(launcher: str, port: int, open_files: int, extra: list[str]) -> "subprocess.Popen[bytes]":
    module = ["app.serve"] if launcher == "serve" else ["uvicorn", "app.main:app", "--no-access-log"]
    command = [sys.executable, "-m", *module, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    env = {**os.environ, "LAB_MODEL_DIR": str(TINY_MODEL), "LAB_JOB_STORE": "memory://"}

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    quiet = subprocess.DEVNULL
    return subprocess.Popen([*command, *extra], cwd=PROJECT_ROOT, env=env, preexec_fn=limit, stdout=quiet, stderr=quiet)


def health(url: str) -> str:
    started = time.perf_counter()
    try:
        status = httpx.get(f"{url}/health", timeout=5).status_code
    except httpx.HTTPError as exc:
        return f"{type(exc).__name__} after {time.perf_counter() - started:.2f} s"
    return f"{status} in {(time.perf_counter() - started) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--launcher", choices=["serve", "uvicorn"], default="serve")
    parser.add_argument("--sockets", type=int, default=1100)
    parser.add_argument("--open-files", type=int, default=1024)
    parser.add_argument("--watch-s", type=float, default=30.0, help="how long to wait for the server to close them")
    parser.add_argument("extra", nargs="*", help="more server options, after --")
    args = parser.parse_args()
    resource.setrlimit(resource.RLIMIT_NOFILE, (args.sockets + 256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = start(args.launcher, port, args.open_files, args.extra)
    sockets: list[socket.socket] = []
    try:
        wait_healthy(url, process, limit_s=120)
        opened_at = time.monotonic()
        for i in range(args.sockets):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            if i % 2:
                sock.sendall(b"GET /hea")
            sockets.append(sock)
        during = health(url)
        times = closed_times(sockets, opened_at, args.watch_s)
        after = health(url)
    finally:
        for sock in sockets:
            sock.close()
        stop_process(process, limit_s=15)
    closed = f"{len(times)}/{args.sockets} closed by the server within {args.watch_s:g} s"
    spread = f" (first {times[0]:.1f} s, last {times[-1]:.1f} s)" if times else ""
    print(f"{args.launcher} {' '.join(args.extra)} | ulimit -n {args.open_files} | {args.sockets} slow sockets")
    print(f"  /health while they are open: {during}; {closed}{spread}; /health after: {after}")


if __name__ == "__main__":
    main()
