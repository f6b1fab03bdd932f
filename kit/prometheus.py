"""A real Prometheus server on 127.0.0.1, scraping a lab every second, for tests and `just metrics`."""

import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.settings import PROJECT_ROOT
from kit.live import LiveServer
from kit.serverproc import free_port, stop_process, wait_healthy

CLASSROOM_CONFIG = PROJECT_ROOT / "grafana" / "prometheus.yml"
CLASSROOM_TARGET = '"127.0.0.1:8000"'


@dataclass
class Sample:
    labels: dict[str, str]
    value: float


class PrometheusServer(LiveServer):
    """A Prometheus process, like a live lab server (its url, process and log), that answers PromQL."""

    def query(self, expr: str) -> list[Sample]:
        """Evaluate an instant PromQL query now; a PromQL error raises with Prometheus' message."""
        response = httpx.get(f"{self.url}/api/v1/query", params={"query": expr}, timeout=10)
        body: dict[str, Any] = response.json()
        if body.get("status") != "success":
            raise ValueError(f"Prometheus rejected {expr!r}: {body.get('error')}")
        data = body["data"]
        if data["resultType"] != "vector":
            raise ValueError(f"{expr!r} gave a {data['resultType']}, not an instant vector")
        return [Sample(item["metric"], float(item["value"][1])) for item in data["result"]]

    def value(self, expr: str) -> float:
        """The single finite value of `expr`, or NaN when there is none (not scraped yet)."""
        finite = [s.value for s in self.query(expr) if math.isfinite(s.value)]
        return finite[0] if len(finite) == 1 else math.nan

    def wait_until(self, check: Callable[[], bool], what: str, limit_s: float = 30.0) -> None:
        """Poll (Prometheus lives in another process) until `check` holds; fail past `limit_s`."""
        deadline = time.monotonic() + limit_s
        while not check():
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self.process.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Prometheus never saw: {what}")
            time.sleep(0.1)

    def target_is_up(self) -> bool:
        targets = httpx.get(f"{self.url}/api/v1/targets", timeout=5).json()["data"]["activeTargets"]
        return bool(targets) and all(t["health"] == "up" for t in targets)


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


@contextmanager
def running_prometheus(target: str) -> Iterator[PrometheusServer]:
    """`with running_prometheus("127.0.0.1:8000") as prom:` scrapes that lab with the classroom config.

    The shipped `grafana/prometheus.yml` is used with only its target replaced, so the
    tests prove the config the instructor runs. Data lives in a temporary folder.
    """
    binary = prometheus_binary()
    if binary is None:
        raise FileNotFoundError("prometheus is not installed (Debian: apt-get install prometheus)")
    classroom = CLASSROOM_CONFIG.read_text(encoding="utf-8")
    if CLASSROOM_TARGET not in classroom:
        raise ValueError(f"{CLASSROOM_CONFIG} no longer scrapes {CLASSROOM_TARGET}")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="lab-prometheus-") as tmp:
        config = Path(tmp) / "prometheus.yml"
        config.write_text(classroom.replace(CLASSROOM_TARGET, f'"{target}"'), encoding="utf-8")
        log_path = Path(tmp) / "prometheus.log"
        with log_path.open("wb") as log_file:
            process = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={Path(tmp) / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                    "--storage.tsdb.retention.time=1h",
                    "--log.level=warn",
                ],
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        server = PrometheusServer(f"http://127.0.0.1:{port}", process, log_path)
        try:
            wait_healthy(server.url, process, limit_s=30, probe="/-/ready")
            yield server
        except BaseException:
            sys.stderr.write(f"--- prometheus log ---\n{server.log()}")
            raise
        finally:
            stop_process(process, limit_s=15)
