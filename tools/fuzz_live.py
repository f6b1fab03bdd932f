"""Schemathesis `--checks all` against a live lab server, once per job store (a probe, not a test).

`python -m tools.fuzz_live [--stores memory,sqlite,redis] [--examples 1000] [--out DIR]`: for each
store, a fresh `python -m app.serve` on the tiny model (kit/live.py, webhooks on with a throwaway
secret), then `schemathesis run` over real HTTP with every check, every phase and `--continue-on-failure`
(else an operation's fuzzing stops at its first failure, far short of the examples asked for), with
schemathesis.toml (statuses the document declares that schemathesis' defaults do not know). Prints,
per store: cases per operation, failures by check, 5xx answers and tracebacks in the server's log.
Redis runs under a random key prefix, deleted afterwards. Tests/api/test_fuzz.py is the bounded, in-process
form that runs in CI; this one is what docs/reliability.md ("Probe rerun") reports.
"""

import argparse
import json
import secrets
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import redis

from kit.live import ROOT, serving
from kit.local import redis_db

REDIS_URL = redis_db(0)


def store_url(kind: str, data_dir: str, prefix: str) -> str:
    return {"memory": "memory://", "sqlite": f"sqlite:///{data_dir}/jobs.db", "redis": f"{REDIS_URL}?prefix={prefix}"}[
        kind
    ]


def summary(ndjson: Path) -> dict[str, object]:
    """Cases and answers per operation, failed checks by name, from schemathesis' NDJSON report."""
    cases: Counter[str] = Counter()
    statuses: defaultdict[str, Counter[int]] = defaultdict(Counter)
    failed: Counter[str] = Counter()
    for line in ndjson.read_text().splitlines():
        event = json.loads(line)
        finished = event.get("ScenarioFinished")
        if finished is None:
            continue
        recorder = finished["recorder"]
        label = str(recorder.get("label"))
        cases[label] += len(recorder.get("cases", {}))
        for interaction in recorder.get("interactions", {}).values():
            if interaction.get("response"):
                statuses[label][interaction["response"]["status_code"]] += 1
        for checks in recorder.get("checks", {}).values():
            failed.update(check["name"] for check in checks if check["status"] == "failure")
    server_errors = sum(n for answered in statuses.values() for status, n in answered.items() if status >= 500)
    return {
        "cases": sum(cases.values()),
        "per_operation": {label: [cases[label], dict(sorted(statuses[label].items()))] for label in sorted(cases)},
        "failed_checks": dict(failed),
        "answers_5xx": server_errors,
    }


def fuzz(kind: str, examples: int, out: Path) -> dict[str, object]:
    prefix = f"fuzz-{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory(prefix="lab-fuzz-live-") as data_dir:
        settings = {"LAB_JOB_STORE": store_url(kind, data_dir, prefix), "LAB_WEBHOOK_SECRET": secrets.token_hex(16)}
        report = out / kind
        try:
            with serving(settings) as server:
                command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(ROOT / "schemathesis.toml")]
                command += ["run", f"{server.url}/api/openapi.json"]
                command += ["--checks", "all", "--max-examples", str(examples), "--continue-on-failure"]
                command += ["--workers", "1", "--request-timeout", "30", "--generation-database", "none"]
                command += ["--no-color", "--report", "ndjson", "--report-dir", str(report)]
                with (report.with_suffix(".out")).open("w") as console:
                    subprocess.run(command, stdout=console, stderr=subprocess.STDOUT, check=False)
                log = server.log()
        finally:
            if kind == "redis":
                client = redis.Redis.from_url(REDIS_URL)
                keys = list(client.scan_iter(f"{prefix}:*"))
                if keys:
                    client.delete(*keys)
    result = summary(next(report.glob("*.ndjson")))
    result["tracebacks_in_log"] = log.count("Traceback")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", default="memory,sqlite,redis")
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path(tempfile.mkdtemp(prefix="lab-fuzz-report-")))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for kind in args.stores.split(","):
        result = fuzz(kind, args.examples, args.out)
        print(json.dumps({"store": kind, **result}, indent=1), flush=True)
    print(f"Reports (NDJSON and console) in {args.out}")


if __name__ == "__main__":
    main()
