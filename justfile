# Review lab tasks. Run `.venv/bin/just` (or `just` inside the venv) to list them.

set shell := ["bash", "-euo", "pipefail", "-c"]

export PATH := justfile_directory() / ".venv/bin:" + env("PATH")
host := env("LAB_HOST", "127.0.0.1")
port := env("LAB_PORT", "8000")
real_model := "models/bge-reranker-base-int8/model.onnx"
twin_model := "models/bge-reranker-base-twin-int8/model.onnx"

# List the recipes.
default:
    @just --list --unsorted

# Serve the lab on http://{{host}}:{{port}} inside the box (1 core, ~1 s/review, 1.2 GiB; LAB_CPUS/LAB_BOX_SECONDS_PER_REVIEW/LAB_MEMORY_CAP_BYTES=0 turn each off).
serve:
    @if [ ! -f {{real_model}} ] && [ ! -f {{twin_model}} ]; then echo "No model yet: building the offline twin once (a few minutes)."; just twin; fi
    python -m app.box --host {{host}} --port {{port}}

# Export BAAI/bge-reranker-base (hub, or LAB_MODEL_SOURCE=/local/snapshot) to int8 ONNX in models/.
model:
    python -m app.prepare real

# Build the offline twin: bge-reranker-base's architecture with random weights (same cost, meaningless scores).
twin:
    python -m app.prepare twin

# Fire N reviews at once at a path (naive|limited|batched|tickets; default: all four in turn): just burst http://127.0.0.1:8000 12
burst url n="12" path="all":
    python3 static/burst.py {{url}} {{n}} {{path}}

# Regenerate the tiny test model committed under tests/assets/tiny-reranker.
tiny-model:
    python -m app.prepare tiny

# Benchmark the twin: batching and padding in-process, then bursts of 12 and 50 at each path (writes static/bench/).
bench:
    @if [ ! -f {{twin_model}} ]; then just twin; fi
    python -m app.bench.batching
    python -m app.bench.bursts

# Lint, type-check and run every test (installs Chromium and Prometheus from Debian if missing).
test: _system-deps
    ruff check app tests static/burst.py
    ruff format --check app tests static/burst.py
    mypy
    mypy static/burst.py
    pytest

# Start the lab and a real Prometheus, burst every path, print each Grafana panel's query and values (--hold keeps them up).
metrics *args:
    python -m tests.metrics_tour {{args}}

# Debian packages the browser and Prometheus tests need.
_system-deps:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    command -v chromium >/dev/null || missing+=(chromium)
    command -v prometheus >/dev/null || missing+=(prometheus)
    [ -d /usr/share/fonts/truetype/nanum ] || missing+=(fonts-nanum)  # Korean glyphs in browser screenshots
    if [ ${#missing[@]} -gt 0 ]; then
        sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi

# Open- or closed-loop load at one path, e.g. `just load --path limited --rate 10 --duration 60 --out /tmp/l` (--help).
load *ARGS:
    python -m app.bench.load {{ARGS}}

# Memory under a real 1.2 GiB cgroup cap (root): naive at 12 clients with and without the guard, paths 2-4 at 200 clients, 1,000 queued tickets.
memcap:
    flock /tmp/lab-cpu.lock python -m app.bench.overload --only naive-12,naive-12-long,naive-12-long-guard,limited-200,batched-200,tickets-200,tickets-1000-queued

# Every overload figure (memory cap, 10x load for 60 s, honest hints) into static/bench/overload.md (~20 min, root).
overload-report *ARGS:
    flock /tmp/lab-cpu.lock python -m app.bench.overload {{ARGS}}
