# Review lab tasks. Run `.venv/bin/just` (or `just` inside the venv) to list them by group.

set shell := ["bash", "-euo", "pipefail", "-c"]

export PATH := justfile_directory() / ".venv/bin:" + env("PATH")
host := env("LAB_HOST", "127.0.0.1")
port := env("LAB_PORT", "8000")
real_model := "models/bge-reranker-base-int8/model.onnx"
twin_dir := "models/bge-reranker-base-twin-int8"
twin_model := twin_dir / "model.onnx"
# Everything ruff and mypy check: the server, the client kit, the benchmarks, the tests, the tools and the students' burst.py.
python_code := "app kit bench tests tools static/burst.py"

# List the recipes, by group.
default:
    @just --list --unsorted

# ---------------------------------------------------------------- lab

# Serve the lab on http://{{host}}:{{port}} inside the box (1 core, ~1 s/review, 1.2 GiB; docs/box.md): real weights if prepared, else the offline twin (built once).
[group('lab')]
serve: _model-if-missing
    python -m app.box --host {{host}} --port {{port}}

# Serve a class on https://localhost:8443 (LAB_DOMAIN, LAB_HTTPS_PORT): nginx's HTTPS/HTTP2 front, with per-client limits, before the box on LAB_PORT (docs/classroom.md).
[group('lab')]
classroom: _model-if-missing _front
    python -m app.front

# Fire N reviews at once at a path (naive|limited|batched|tickets|1-4; default all four): just burst http://127.0.0.1:8000/api 12
[group('lab')]
burst url n="12" path="all":
    python3 static/burst.py {{url}} {{n}} {{path}}

# Start the lab and a real Prometheus, burst every path, print each Grafana panel's query and values (--hold keeps them up).
[group('lab')]
metrics *args: setup
    python -m tools.metrics_tour {{args}}

# ---------------------------------------------------------------- model

# Export BAAI/bge-reranker-base (hub, or LAB_MODEL_SOURCE=/local/snapshot) to int8 ONNX in models/.
[group('model')]
model:
    python -m app.prepare real

# Build the offline twin: bge-reranker-base's architecture with random weights (same cost, meaningless scores).
[group('model')]
twin:
    python -m app.prepare twin

# Regenerate the tiny test model committed under tests/assets/tiny-reranker.
[group('model')]
tiny-model:
    python -m app.prepare tiny

# Build the twin only when no model is there yet (the real one or the twin): `serve` depends on it.
# A twin built before its tokenizer had XLM-R's 250,002 pieces gets that tokenizer (seconds; docs/model.md).
[private]
_model-if-missing:
    @test -f {{real_model}} || test -f {{twin_model}} || { echo "No model yet: building the offline twin once (a few minutes)."; just twin; }
    @test -f {{real_model}} || grep -q '(250002 tokens)' {{twin_dir}}/manifest.json || { echo "Giving the twin XLM-R's vocabulary size (once)."; python -m app.prepare twin-tokenizer; }

# Install Debian's nginx (security-updated) and openssl only when missing (`classroom` depends on it). Debian starts
# its own nginx service on port 80 at install: the lab runs its own nginx, so a service it just installed is stopped.
[private]
_front:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)
    command -v openssl >/dev/null || missing+=(openssl)
    [ ${#missing[@]} -eq 0 ] && exit 0
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
    if [[ " ${missing[*]} " == *" nginx "* ]] && [ -d /run/systemd/system ]; then
        $sudo systemctl disable --now nginx || true
        echo "Stopped and disabled Debian's nginx service (port 80): the lab starts its own nginx."
    fi

# Build the twin only when it is not there yet: the benchmarks measure the twin, whatever else is prepared.
[private]
_twin-if-missing:
    @test -f {{twin_model}} || just twin
    @grep -q '(250002 tokens)' {{twin_dir}}/manifest.json || python -m app.prepare twin-tokenizer

# ---------------------------------------------------------------- tests

# What the tests need from the system: Debian's chromium, prometheus, nginx, openssl, npm and Korean fonts, axe-core from npm (package-lock.json) (installed only when missing),
# and the Redis at 127.0.0.1:6379 (started only when redis-server is installed and nothing answers there).
# Install what the browser, Prometheus and Redis tests need (only what is missing or down).
[group('tests')]
setup:
    #!/usr/bin/env bash
    set -euo pipefail
    missing=()
    command -v chromium >/dev/null || missing+=(chromium)
    command -v prometheus >/dev/null || missing+=(prometheus)
    command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx)  # the classroom front and its tests
    command -v openssl >/dev/null || missing+=(openssl)  # the front's self-signed certificate
    command -v npm >/dev/null || missing+=(npm)  # axe-core for the accessibility tests (package.json)
    [ -d /usr/share/fonts/truetype/nanum ] || missing+=(fonts-nanum)  # Korean glyphs in browser screenshots
    if [ ${#missing[@]} -gt 0 ]; then
        sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -q
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
        if [[ " ${missing[*]} " == *" nginx "* ]] && [ -d /run/systemd/system ]; then
            $sudo systemctl disable --now nginx || true  # Debian's own service on port 80: the lab runs its own
        fi
    fi
    [ -f node_modules/axe-core/axe.min.js ] || npm ci --no-audit --no-fund --silent
    if command -v redis-server >/dev/null && ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
        redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    fi

# Lint and type-check everything (burst.py also as Python 3.9, the oldest a student's Mac may have).
[group('tests')]
lint:
    ruff check {{python_code}}
    ruff format --check {{python_code}}
    ruff check --target-version py39 static/burst.py
    mypy
    mypy static/burst.py

# Lint, type-check and run every test, slow ones included (real servers, Chromium, Prometheus).
[group('tests')]
test: setup lint
    pytest

# Only the fast tests (no real server, browser or Prometheus): the inner loop while editing.
[group('tests')]
test-fast:
    pytest -m "not slow and not browser and not prometheus"

# Schemathesis `--checks all`, 1,000 examples per operation, against a live server on each store (memory, sqlite, the Redis at 127.0.0.1:6379); ~3-5 min per store; not part of `test` (docs/reliability.md, "Probe rerun").
[group('tests')]
fuzz *args:
    python -m tools.fuzz_live {{args}}

# ---------------------------------------------------------------- bench

# Benchmark the twin: batching cost on one core, bursts of 12 and 50 at each path in the box, then ③ beside LitServe (docs/bench/).
[group('bench')]
bench: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.batching
    flock /tmp/lab-cpu.lock python -m bench.bursts
    just bench-peer

# ③ beside LitServe (extra `peer`) and Infinity (extra `infinity`, own venv) on one pinned core: same model file and client (docs/bench/peer.md; ARGS: --help).
[group('bench')]
bench-peer *ARGS: _twin-if-missing setup-infinity
    flock /tmp/lab-cpu.lock python -m bench.peer {{ARGS}}

# ② ③ ⑤ under Poisson streams at 0.5×, 2× and 5× of the lane, 30 s client timeouts (docs/adaptive.md; ARGS: --help).
[group('bench')]
bench-adaptive *ARGS: _twin-if-missing
    flock -o /tmp/lab-cpu.lock python -m bench.adaptive {{ARGS}}

# ⑤ in a class's crowds: 12 students × 12, one student's 12 beside eleven's one, one student's 50, beside busy ②③④, a long review (~3 min; ARGS: --help).
[group('bench')]
bench-adaptive-class *ARGS: _twin-if-missing
    flock -o /tmp/lab-cpu.lock python -m bench.adaptive_class {{ARGS}}

# ① at the cliff: bursts of 4-16 at ① on a fresh box each, lived or died and the peak, beside the seed's server (docs/box.md; root; ~30 min; ARGS: --help).
[group('bench')]
bench-cliff *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.cliff {{ARGS}}

# Measure the stand-in on this host, once: the seed's server at rest less the lab's (root, the `model` extra; minutes), cached in models/stand-in.json for every later `serve` (docs/box.md).
[group('bench')]
bench-stand-in *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.stand_in {{ARGS}}

# The box as `just serve` runs it: ① serialized on one core, calibration, deaths at the cap, memory given back (docs/box.md; root; ARGS: --help).
[group('bench')]
bench-box *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.box {{ARGS}}

# The box's speed loop live: a CPU hog on its core comes or goes, the median review stays at its target (docs/box.md; ARGS: --help).
[group('bench')]
bench-speed *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.speed {{ARGS}}

# ②'s held seats as a policy, in-process with a model that sleeps each review's cost: returners seated, walk-ins refused (docs/overload.md).
[group('bench')]
bench-holds *ARGS:
    python -m bench.holds {{ARGS}}

# ④'s promises when ② and ③ share the lane: bursts of 12 at ②, ③ and ④ together on the default box (docs/tickets.md; ARGS: --help).
[group('bench')]
bench-eta-mixed *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.eta_mixed {{ARGS}}

# The class view's cost on the box: 40 students × 50 requests a minute, 3 class views, record on and off (docs/classroom.md; ARGS: --help).
[group('bench')]
bench-classview *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.classview {{ARGS}}

# Infinity for the peer bench in .venv-infinity (it pins numpy<2 and uvicorn<0.33; torch pinned to the CPU build).
[group('bench')]
setup-infinity:
    @test -x .venv-infinity/bin/infinity_emb || { python3 -m venv .venv-infinity && .venv-infinity/bin/pip install -q -e '.[infinity]'; }

# Open- or closed-loop load at one path, e.g. `just load --path limited --rate 10 --duration 60 --out /tmp/l` (--help).
[group('bench')]
load *ARGS:
    python -m kit.load {{ARGS}}

# Memory under a real 1.2 GiB cgroup cap (root): naive at 12 clients with and without the guard, paths 2-4 at 200 clients, 1,000 queued tickets.
[group('bench')]
memcap: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m bench.overload --only naive-12,naive-12-long,naive-12-long-guard,limited-200,batched-200,tickets-200,tickets-1000-queued

# Every overload figure (memory cap, 10x load for 60 s, honest hints) into docs/bench/overload.md (~20 min, root).
[group('bench')]
overload-report *ARGS:
    flock /tmp/lab-cpu.lock python -m bench.overload {{ARGS}}

# ---------------------------------------------------------------- tools
# One-off measurements and generated assets; each prints what it saw for the doc named (ARGS: --help).

# The handout's lessons tried as a class tries them, through a running `just classroom` (docs/classroom.md; needs --token).
[group('tools')]
class-check *ARGS:
    python -m tools.class_check {{ARGS}}

# The class view alone, walked through the front as a class uses it: pages and burst.py fire ①–⑤ while /class follows (ARGS: FRONT --token T --box-port P; --help).
[group('tools')]
class-view-walk *ARGS:
    python -m tools.class_view_walk {{ARGS}}

# A SIGTERM with an event stream open: how the stream ends and how long the exit takes (docs/reliability.md).
[group('tools')]
drain-time *ARGS:
    flock /tmp/lab-cpu.lock python -m tools.drain_time {{ARGS}}

# Redraw static/favicon.ico (the burst page in miniature).
[group('tools')]
favicon:
    python -m tools.favicon

# What idle event-stream followers cost a live server: CPU and POST latency (docs/reliability.md).
[group('tools')]
followers-cost *ARGS:
    flock /tmp/lab-cpu.lock python -m tools.followers_cost {{ARGS}}

# Attack a running classroom front on loopback and watch what a classmate gets meanwhile (docs/classroom.md).
[group('tools')]
front-attacks *ARGS:
    python -m tools.front_attacks {{ARGS}}

# Whether the burst page's status panel stays live during a burst, over the WebSocket and polling (docs/burst-page.md).
[group('tools')]
live-panel:
    flock /tmp/lab-cpu.lock python -m tools.live_panel

# What idle live-stats sockets cost the box: a lone review's time with N pages open and with none (docs/reliability.md).
[group('tools')]
live-sockets-cost *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m tools.live_sockets_cost {{ARGS}}

# Proposed screenshots of the burst page at 1366x900 and 390x844 into docs/img/ (docs/burst-page.md).
[group('tools')]
page-screenshots:
    flock /tmp/lab-cpu.lock python -m tools.page_screenshots

# Retake the README's screenshot: a burst of 12 on ② against the twin, in the box (MODEL_DIR: another model).
[group('tools')]
readme-screenshot *ARGS: _twin-if-missing
    flock /tmp/lab-cpu.lock python -m tools.readme_screenshot {{ARGS}}

# What slow and silent clients do to a server: when it closes them, and /health meanwhile (docs/reliability.md).
[group('tools')]
slow-clients *ARGS:
    flock /tmp/lab-cpu.lock python -m tools.slow_clients {{ARGS}}

# How long one client's webhook waits behind ten aimed at a receiver that never answers (docs/reliability.md).
[group('tools')]
webhook-delay:
    flock /tmp/lab-cpu.lock python -m tools.webhook_delay
