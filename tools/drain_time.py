"""Measure a SIGTERM with an event stream open: `python -m tools.drain_time --launcher serve`.

Starts the lab (tiny model slowed to 2 s a review), follows the last of 20 queued tickets (40 s of
work), sends SIGTERM and reports how the stream ended, how long the process took to exit, and
whether its log has a traceback.
"""

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

import httpx

from app.settings import PROJECT_ROOT
from kit.live import slowed
from kit.serverproc import free_port, wait_healthy

TINY_MODEL = PROJECT_ROOT / "tests" / "assets" / "tiny-reranker"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--launcher", choices=["serve", "uvicorn"], default="serve")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    module = ["app.serve"] if args.launcher == "serve" else ["uvicorn", "app.main:app", "--no-access-log"]
    extra = [] if args.launcher == "serve" else ["--timeout-graceful-shutdown", "30"]  # what `just serve` ran
    data = tempfile.mkdtemp()
    env = {**os.environ, "LAB_MODEL_DIR": str(TINY_MODEL), "LAB_JOB_STORE": f"sqlite:///{data}/jobs.db"}
    env.update(slowed(2))
    log_path = pathlib.Path(data) / "server.log"
    command = [sys.executable, "-m", *module, "--host", "127.0.0.1", "--port", str(port), *extra]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=log, stderr=log)
    wait_healthy(url, process, limit_s=120)
    with httpx.Client(base_url=url, timeout=60) as client:
        ids = [client.post("/api/queue/jobs", json={"text": f"드레인 {i}"}).json()["job_id"] for i in range(20)]
    lines: list[str] = []
    ended: list[float] = []
    opened = threading.Event()

    def follow() -> None:
        try:
            events = f"/api/queue/jobs/{ids[-1]}/events"
            with httpx.Client(base_url=url, timeout=120) as client, client.stream("GET", events) as stream:
                for line in stream.iter_lines():
                    lines.append(line)
                    opened.set()
        except httpx.HTTPError as exc:
            lines.append(f"event: (cut: {type(exc).__name__})")
        ended.append(time.monotonic())

    reader = threading.Thread(target=follow)
    reader.start()
    opened.wait(30)
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    process.wait(120)
    exited = time.monotonic() - sent
    reader.join(120)
    text = log_path.read_text(errors="replace")
    last = [line for line in lines if line.startswith("event: ")][-1:]
    print(
        f"{args.launcher} {' '.join(extra)}: stream ended {ended[0] - sent:.2f} s after SIGTERM, last {last}; "
        f"exit after {exited:.2f} s (code {process.returncode}); traceback in log: {'Traceback' in text}"
    )


if __name__ == "__main__":
    main()
