"""Measures whether the burst page's status panel stays live during a burst, over the WebSocket and over
the polling fallback, in headless Chromium against a live server (tiny model slowed to 1 s a review).

Not a test: it prints what it saw, for docs/burst-page.md. Timing, so take the CPU lock:

    flock /tmp/lab-cpu.lock .venv/bin/python -m tools.live_panel
"""

import argparse
import json
import re
import subprocess
import time
from typing import Any
from urllib.parse import urlparse

from playwright.sync_api import Browser, WebSocketRoute, sync_playwright

from kit.live import live_server, slowed
from kit.local import CHROMIUM, CHROMIUM_ARGS

BURST = 12
SAMPLE_S = 0.1


def connections_to(port: int) -> int:
    """Established TCP connections from a client to the server's port, as the kernel sees them."""
    out = subprocess.run(["ss", "-Htn", "state", "established", f"( dport = :{port} )"], capture_output=True, text=True)
    return len([line for line in out.stdout.splitlines() if line.strip()])


def measure(browser: Browser, url: str, channel: str) -> dict[str, Any]:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, locale="ko-KR")
    page = context.new_page()
    if channel == "polling":

        def refuse(socket: WebSocketRoute) -> None:
            socket.close(code=1011, reason="measuring the fallback")

        page.route_web_socket(re.compile(r"/api/stats/live$"), refuse)
    page.goto(f"{url}/")
    page.wait_for_function(f"document.getElementById('box-panel').dataset.channel === '{channel}'")
    page.wait_for_function("document.getElementById('box-panel').dataset.stale === 'false'")
    page.check("input[name=path][value=batched]")
    page.fill("#burst-size", str(BURST))
    page.click("#fire")
    ages: list[float] = []
    held: list[int] = []
    connections: list[int] = []
    port = urlparse(url).port or 80
    while page.get_attribute("#burst-status", "data-state") != "done":
        state = page.evaluate(
            """() => ({age: Number(document.getElementById('box-panel').dataset.ageMs || 0),
                       pending: document.querySelectorAll('#rows tbody tr.pending').length})"""
        )
        ages.append(state["age"])
        held.append(state["pending"])
        connections.append(connections_to(port))
        time.sleep(SAMPLE_S)
    record = json.loads(page.get_attribute("#box-burst", "data-record") or "{}")
    duration_ms = float(page.get_attribute("#rows", "data-scale-ms") or 0)
    context.close()
    stale = [a for a in ages if a > 2000]
    return {
        "channel": channel,
        "burst_s": round(duration_ms / 1000, 2),
        "panel_updates": record["updates"],
        "max_gap_s": round(record["maxGapMs"] / 1000, 2),
        "samples": len(ages),
        "stale_share": round(len(stale) / max(len(ages), 1), 2),
        "max_age_s": round(max(ages, default=0) / 1000, 2),
        "peak_waiting_batched": record["peakWaiting"].get("batched"),
        "lane_busy_seen": record["laneBusy"],
        "max_tcp_connections_to_server": max(connections, default=0),
        "max_rows_pending": max(held, default=0),
    }


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; burst of {BURST} on path 3, 1 s per review")
    with live_server(**slowed(1)) as server, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for channel in ("websocket", "polling"):
            print(json.dumps(measure(browser, server.url, channel), ensure_ascii=False))
        browser.close()


if __name__ == "__main__":
    main()
