"""The stand-in measured on this host: what the seed's server holds at rest beyond the lab's own (docs/box.md).

`flock /tmp/lab-cpu.lock python -m bench.stand_in [--tries 3]` (`just bench-stand-in`), once per host.

As bench/cliff.py measures a try at rest (`--sizes 0 --no-stand-in`): the seed's server (bench/seed_server.py:
optimum, transformers, torch) and the lab's own (`python -m app.box` without the stand-in), each fresh in a
memory cgroup, one review served, then the group's charge (usage less inactive page cache); the median of
`--tries` fresh servers each. Seed less lab is what the box holds for the seed's libraries: written to
models/stand-in.json with this host's CPU as its key (app/inside/stand_in.py), which every later start of
the box on this CPU holds instead of the committed figure. Needs root (cgroups) and the `model` extra.
JSON lines on stdout: one per server, then the figure.
"""

import argparse
import json
import statistics
import sys
import tempfile
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import psutil

from app.host import cpu_model
from app.inside.stand_in import CACHE_NAME, cache_key, write_cache
from app.settings import MODELS_DIR
from bench.cliff import MIB, seed_model_dir, try_lab, try_seed

LIBRARIES = ("optimum", "optimum-onnx", "transformers", "torch")
FLAGS = ("avx2", "avx512f", "avx512_vnni")  # what makes one AMD EPYC's figure differ from another's


def libraries() -> str:
    found = []
    for name in LIBRARIES:
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    return ", ".join(found)


def host() -> str:
    """`AMD EPYC (2 vCPUs, avx2, avx512_vnni)`: the CPU, its count and the vector extensions it has."""
    words = Path("/proc/cpuinfo").read_text(encoding="utf-8").split() if Path("/proc/cpuinfo").exists() else []
    flags = [f for f in FLAGS if f in words]
    return f"{cpu_model()} ({', '.join([f'{psutil.cpu_count()} vCPUs', *flags])})"


def at_rest(server: str, run: dict[str, Any]) -> int:
    if "charged" not in run["rest"]:
        sys.exit(f"The {server} server ran without a memory cgroup to read (needs root and cgroups).")
    charged: int = run["rest"]["charged"]
    print(json.dumps({"server": server, "rest_mib": round(charged / MIB), "died": run["died"]}), flush=True)
    return charged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tries", type=int, default=3, help="fresh servers of each kind (the median is kept)")
    parser.add_argument("--core", type=int, default=1, help="the seed server's core (the lab's box picks its own)")
    parser.add_argument("--cache", type=Path, default=MODELS_DIR / CACHE_NAME, help="where the figure is written")
    args = parser.parse_args()
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="lab-seed-model-") as work:
        try:
            model = seed_model_dir(Path(work))
        except ImportError as exc:
            sys.exit(f"The seed's server needs the `model` extra (pip install -e '.[model]'): {exc}")
        seed = [at_rest("seed", try_seed(model, 0, t, args.core, prime=True)) for t in range(args.tries)]
    lab = [at_rest("lab", try_lab(0, t, stand_in=False, prime=True)) for t in range(args.tries)]
    seed_mib, lab_mib = statistics.median(seed) / MIB, statistics.median(lab) / MIB
    size = round(statistics.median(seed) - statistics.median(lab))
    if size <= 0:
        sys.exit(f"The seed's server held no more than the lab's ({seed_mib:.0f} and {lab_mib:.0f} MiB): not written.")
    stands_for = (
        f"what the seed's server holds at rest beyond the lab's own: {libraries()}, "
        "imported to serve ① through ORTModelForSequenceClassification"
    )
    measured = (
        f"{started:%Y-%m-%d %H:%M}-{datetime.now(UTC):%H:%M} UTC, {host()}, python -m bench.stand_in --tries "
        f"{args.tries}: the memory cgroup's charge at rest (usage less inactive page cache) after one review, "
        f"median of {args.tries} fresh servers each, seed {seed_mib:.0f} MiB less lab {lab_mib:.0f} MiB "
        f"= {size / MIB:.0f} MiB"
    )
    write_cache(args.cache, size, stands_for, measured, cache_key())
    print(json.dumps({"libraries_bytes": size, "measured": measured, "cache": str(args.cache)}), flush=True)


if __name__ == "__main__":
    main()
