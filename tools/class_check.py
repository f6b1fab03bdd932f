"""The handout's lessons tried as a class tries them, through the classroom front (`just classroom`).

`python -m tools.class_check https://127.0.0.1:8443 --token TOKEN [--tries 3] [--pages 12]`, with
`python -m app.front` running (default settings) and TOKEN the instructor token it printed:

1. ① 12 and ① 8, `tries` times each, with the students' own `burst.py` (through the front, `-k`)
   and from the burst page in Chromium (a fresh page each try, over HTTP/2): did the box die (a 502
   or a cut connection seen by the student, and the box's death count), or did every row get 200?
2. ②, a class at once: `pages` students run `burst.py … 12 limited` together, nobody comes back,
   and as soon as that burst has ended the same class fires again: the 200s of each.
3. What a no-show costs the class on ②: the class fires ② 12 together and nobody comes back; as soon
   as that burst has ended, `walk_ins` students send ② once a second without a token until served: the
   seconds and refusals each took, and how many of those refusals found ②'s lane idle.
4. The instructor turns a knob with the start-up token once the box has died at least twice.

The front limits each client (app/front/nginx.conf): ① to 12 a minute with a burst of 24, 32 requests
at once. One student's tries of ① are paced to that budget, as a student who retries each minute;
the class's students each come from their own loopback address (127.0.0.2, …), as laptops in a
classroom do, so the front sees a class and not one client.

One JSON line per result on stdout. Loopback only; every loop is bounded.
"""

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
BURST_PY = ROOT / "static" / "burst.py"
NAIVE_PER_MINUTE = 12  # the front's ① budget per client (app/front/nginx.conf, zone client_naive)
# burst.py as a student on `argv[1]` runs it: every connection it opens leaves from that loopback address.
FROM_ADDRESS = (
    "import runpy, socket, sys; source = (sys.argv.pop(1), 0); plain = socket.create_connection; "
    "socket.create_connection = lambda address, *a, **k: plain(address, a[0] if a else k.get('timeout', 30), source); "
    "sys.argv[0] = sys.argv[1]; del sys.argv[1]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def student(i: int) -> str:
    """The loopback address student `i` (0-based) comes from."""
    return f"127.0.0.{i + 2}"


def emit(**row: Any) -> None:
    print(json.dumps({"at": f"{datetime.now(UTC):%H:%M:%S}", **row}, ensure_ascii=False), flush=True)


def stats(front: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{front}/api/stats", verify=False, timeout=10).json()
    return body


def box_back(front: str, limit_s: float = 300) -> dict[str, Any]:
    """/api/stats once the box answers through the front again (a death restarts it)."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            return stats(front)
        except (httpx.HTTPError, ValueError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def wait_idle(front: str, limit_s: float = 300) -> None:
    """Until nothing is in flight or waiting on any path (a burst's tail must not meet the next)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        body = box_back(front)
        if not any(p["in_flight"] or p["waiting"] for p in body["paths"].values()):
            return
        time.sleep(0.5)


def burst_command(front: str, n: int, path: str, out: Path, source: str | None = None) -> list[str]:
    shim = ["-c", FROM_ADDRESS, source] if source else []
    return [sys.executable, *shim, str(BURST_PY), f"{front}/api", str(n), path, "-k", "--json", str(out)]


def burst_py(front: str, n: int, path: str) -> list[int]:
    """The students' burst.py through the front; each row's status (0: no answer, the box died under it)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        command = burst_command(front, n, path, Path(out.name))
        subprocess.run(command, capture_output=True, timeout=600, check=False)
        report = json.loads(Path(out.name).read_text(encoding="utf-8") or "{}")
    return [row.get("status") or 0 for burst in report.get("bursts", []) for row in burst["rows"]]


def page_burst(front: str, n: int, path: str) -> list[int]:
    """A fresh burst page in Chromium (HTTP/2 through the front) fires n at `path`; each row's status."""
    from playwright.sync_api import sync_playwright  # the dev extra: only this check needs a browser

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_context(ignore_https_errors=True).new_page()
            page.goto(f"{front}/", wait_until="load")
            page.check(f"input[name=path][value={path}]")
            page.check("input[name=mode][value=distinct]")
            page.fill("#burst-size", str(n))
            page.click("#fire")
            page.wait_for_selector("#burst-status[data-state=done]", timeout=600_000)
            statuses: list[str] = page.eval_on_selector_all("#rows tbody tr", "rows => rows.map(r => r.dataset.status)")
        finally:
            browser.close()
    return [int(s) if s and s.isdigit() else 0 for s in statuses]


def naive_tries(front: str, n: int, tries: int, client: str) -> None:
    fire = burst_py if client == "burst.py" else page_burst
    for attempt in range(1, tries + 1):
        wait_idle(front)
        time.sleep(60 * n / NAIVE_PER_MINUTE)  # the front's ① budget refills: no row refused by the front
        before = box_back(front)["box"]["deaths"]
        got = fire(front, n, "naive")
        after = box_back(front)["box"]
        emit(
            check=f"naive {n}",
            client=client,
            attempt=attempt,
            statuses={str(s): got.count(s) for s in sorted(set(got))},
            died=after["deaths"] > before,
            last_death=after["last_death"],
        )


def class_burst(front: str, pages: int) -> list[int]:
    """`pages` students run `burst.py … 12 limited` together and nobody comes back: each row's status."""
    with tempfile.TemporaryDirectory() as work:
        outs = [Path(work) / f"{i}.json" for i in range(pages)]
        procs = [
            subprocess.Popen(
                burst_command(front, 12, "limited", out, student(i)),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            for i, out in enumerate(outs)
        ]
        for proc in procs:
            proc.wait(timeout=600)
        rows = [row for out in outs for burst in json.loads(out.read_text("utf-8"))["bursts"] for row in burst["rows"]]
    return [row.get("status") or 0 for row in rows]


def limited_class(front: str, pages: int) -> None:
    """A class fires ② 12 together, nobody returns; as soon as that burst is over, it fires again."""
    wait_idle(front)
    for round_ in ("first", "again"):
        started = time.monotonic()
        statuses = class_burst(front, pages)
        emit(
            check="limited class",
            round=round_,
            pages=pages,
            statuses={str(s): statuses.count(s) for s in sorted(set(statuses))},
            seconds=round(time.monotonic() - started, 1),
        )


def walk_in(front: str, source: str, limit_s: float) -> dict[str, Any]:
    """② once a second without a token until a 200: seconds, refusals, and refusals while ② was empty."""
    started, refused, idle = time.monotonic(), 0, 0
    transport = httpx.HTTPTransport(verify=False, local_address=source)
    with httpx.Client(transport=transport, timeout=120) as client:
        while time.monotonic() - started < limit_s:
            sent = time.monotonic()
            answer = client.post(f"{front}/api/limited/predict", json={"text": "배송이 빨라서 좋았어요."})
            if answer.status_code == 200:
                return {"served_after_s": round(time.monotonic() - started, 1), "refused": refused, "idle": idle}
            refused += 1
            limited = client.get(f"{front}/api/stats").json()["paths"]["limited"]
            idle += limited["in_flight"] == 0 and limited["seats_taken"] == 0
            time.sleep(max(0.0, 1.0 - (time.monotonic() - sent)))  # a student's retry loop: once a second
    return {"served_after_s": None, "refused": refused, "idle": idle}


def no_show_cost(front: str, pages: int, walk_ins: int) -> None:
    """The class's ② burst, nobody returns, then `walk_ins` students retry once a second without a token."""
    from concurrent.futures import ThreadPoolExecutor

    wait_idle(front)
    statuses = class_burst(front, pages)
    held = box_back(front)["paths"]["limited"]["held"]
    with ThreadPoolExecutor(walk_ins) as pool:
        results = list(pool.map(lambda i: walk_in(front, student(pages + i), 120), range(walk_ins)))
    holds = box_back(front)["holds"]
    emit(
        check="no-show cost",
        pages=pages,
        burst={str(s): statuses.count(s) for s in sorted(set(statuses))},
        held_after_burst=held,
        walk_ins=results,
        holds=holds,
    )


def turn_a_knob(front: str, token: str) -> None:
    deaths = box_back(front)["box"]["deaths"]
    knobs = httpx.get(f"{front}/api/knobs", verify=False, timeout=10).json()["knobs"]
    now = next(knob["value"] for knob in knobs if knob["setting"] == "limited_max_wait_s")
    answer = httpx.put(
        f"{front}/api/knobs/limited_max_wait_s",
        json={"value": 20.0 if now != 20.0 else 15.0},
        headers={"Authorization": f"Bearer {token}"},
        verify=False,
        timeout=10,
    )
    emit(check="instructor token", deaths_so_far=deaths, status=answer.status_code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("front", help="the classroom front, e.g. https://127.0.0.1:8443")
    parser.add_argument("--token", required=True, help="the instructor token the box printed at start-up")
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--walk-ins", type=int, default=2)
    parser.add_argument("--only", default="naive,limited,no-show,token")
    args = parser.parse_args()
    front = args.front.rstrip("/")
    emit(check="start", front=front)
    if "naive" in args.only:
        for n in (12, 8):
            for client in ("burst.py", "page"):
                naive_tries(front, n, args.tries, client)
    if "limited" in args.only:
        limited_class(front, args.pages)
    if "no-show" in args.only:
        no_show_cost(front, args.pages, args.walk_ins)
    if "token" in args.only:
        turn_a_knob(front, args.token)


if __name__ == "__main__":
    main()
