"""The handout's lessons tried as a class tries them, through the classroom front (`just classroom`).

`python -m tools.class_check https://127.0.0.1:8443 --token TOKEN [--tries 3] [--pages 12] [--one-address]
[--only naive,…,classview] [--box-port 8000]`,
with `python -m app.front` running (default settings) and TOKEN the instructor token it printed:

1. ① 12 and ① 8, `tries` times each, with the students' own `burst.py` (through the front, `-k`)
   and from the burst page in Chromium (a fresh page each try, over HTTP/2): did the box die (a 502
   or a cut connection seen by the student, and the box's death count), or did every row get 200?
2. ②, a class at once: `pages` students run `burst.py … 12 limited` together, nobody comes back,
   and as soon as that burst has ended the same class fires again: the answers of each, by who refused.
3. What a no-show costs the class on ②: the class fires ② 12 together and nobody comes back; as soon
   as that burst has ended, `walk_ins` students send ② once a second without a token until served: the
   seconds and refusals each took, and how many of those refusals found ②'s lane idle.
4. The instructor turns a knob with the start-up token once the box has died at least twice.
5. `pages`: `pages` burst pages in Chromium (each a student with the key the box gives it) fire ② 12
   together, twice a second apart: the answers by who refused, and whether every live panel stayed on its
   WebSocket for the next 60 s.
6. `flood`: one student's key sends 500 ② at once while 11 classmates send 12 each: who refused whom.
7. `walk`: 3 pages fire ② 12 with "거절되면 다시 오기" while a walk-in page fires ② once every 5 s, 4 times:
   returners seated on their first return, walk-ins served (docs/held-seats.md).
8. `classview`: the instructor's /class follows `pages` student pages and three burst.py runs firing ①–⑤ (① 12
   twice: the box dies, or lives at its cap's edge): each request once as its student saw it, each death one mark
   within 1 s, the tallies against /api/stats and the students' summaries, replay, export, axe
   (tools/class_view_walk.py; `--box-port`: the box behind the front, whose server process this machine watches
   for the moment it dies).

Where students come from: by default each from their own loopback address (127.0.0.2, …), as laptops
on a LAN; with `--one-address` all from 127.0.0.9, as a school behind one NAT address. Each `burst.py`
run is its own student (its own key); the front keys its limits on students (app/front/nginx.conf).
One student's tries of ① are paced to the front's ① budget per student, as a student who retries each minute.

One JSON line per result on stdout; answers are counted as "200", "429 box_full", "429 front_limit", "502",
"0" (no answer). Loopback only; every loop is bounded.
"""

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from kit.serverproc import wait_healthy

ROOT = Path(__file__).resolve().parents[1]
BURST_PY = ROOT / "static" / "burst.py"
NAIVE_PER_MINUTE = 12  # the front's ① budget per student (app/front/nginx.py StudentLimits.naive_per_min)
# burst.py as a student on `argv[1]` runs it: every connection it opens leaves from that loopback address.
FROM_ADDRESS = (
    "import runpy, socket, sys; source = (sys.argv.pop(1), 0); plain = socket.create_connection; "
    "socket.create_connection = lambda address, *a, **k: plain(address, a[0] if a else k.get('timeout', 30), source); "
    "sys.argv[0] = sys.argv[1]; del sys.argv[1]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


SCHOOL = "127.0.0.9"  # --one-address: the whole class behind one NAT address
ONE_ADDRESS = False


def student(i: int) -> str:
    """The loopback address student `i` (0-based) comes from: their own, or the school's."""
    return SCHOOL if ONE_ADDRESS else f"127.0.0.{i + 2}"


def label(status: int | None, error: str | None = None) -> str:
    """An answer as the tables count it: its status, and for a 429 who refused ("429 front_limit")."""
    return f"{status or 0} {error}" if status == 429 and error else str(status or 0)


def tally(labels: list[str]) -> dict[str, int]:
    return {k: labels.count(k) for k in sorted(set(labels))}


def emit(**row: Any) -> None:
    print(json.dumps({"at": f"{datetime.now(UTC):%H:%M:%S}", **row}, ensure_ascii=False), flush=True)


def stats(front: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{front}/api/stats", verify=False, timeout=10).json()
    return body


def box_back(front: str, limit_s: float = 300) -> dict[str, Any]:
    """/api/stats once the box answers through the front again (a death restarts it)."""
    wait_healthy(front, limit_s=limit_s, verify=False)
    return stats(front)


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
        command = burst_command(front, n, path, Path(out.name), student(0) if ONE_ADDRESS else None)
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


def class_burst(front: str, pages: int) -> list[str]:
    """`pages` students run `burst.py … 12 limited` together and nobody comes back: each row's answer (`label`)."""
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
    return [label(row.get("status"), row.get("error")) for row in rows]


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
            answers=tally(statuses),
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
        burst=tally(statuses),
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


PAGE_ANSWERS = """rows => rows.map((r) => [r.dataset.status, r.querySelector('td.status').textContent])"""


def page_label(status: str, text: str) -> str:
    error = next((code for code in ("front_limit", "box_full", "job_queue_full") if code in text), None)
    return label(int(status) if status.isdigit() else 0, error)


def class_pages(front: str, pages: int, hold_s: float = 60) -> None:
    """`pages` burst pages (Chromium, one address: 127.0.0.1) fire ② 12 together, twice a second apart; then
    whether every live panel stays on its WebSocket for `hold_s`."""
    from playwright.sync_api import sync_playwright  # the dev extra: only this check needs a browser

    wait_idle(front)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            tabs = [browser.new_context(ignore_https_errors=True).new_page() for _ in range(pages)]
            for tab in tabs:
                tab.goto(f"{front}/", wait_until="load")
                tab.wait_for_function("document.getElementById('box-panel').dataset.channel !== 'connecting'")
            live = [tab.get_attribute("#box-panel", "data-channel") for tab in tabs].count("websocket")
            for round_ in ("first", "again"):
                for tab in tabs:
                    tab.check("input[name=path][value=limited]")
                    tab.check("input[name=mode][value=distinct]")
                    tab.fill("#burst-size", "12")
                    tab.click("#fire")
                answers: list[str] = []
                for tab in tabs:
                    tab.wait_for_selector("#burst-status[data-state=done]", timeout=600_000)
                    answers += [page_label(*row) for row in tab.eval_on_selector_all("#rows tbody tr", PAGE_ANSWERS)]
                emit(check="class pages", round=round_, pages=pages, answers=tally(answers), live_before=live)
                time.sleep(1)  # the class fires again a second later
            fewest = pages
            deadline = time.monotonic() + hold_s
            while time.monotonic() < deadline:
                channels = [tab.get_attribute("#box-panel", "data-channel") for tab in tabs]
                fewest = min(fewest, channels.count("websocket"))
                time.sleep(5)
            emit(check="class pages live", pages=pages, fewest_live_over_s={str(int(hold_s)): fewest})
        finally:
            browser.close()


SEATED = re.compile(r"첫 재방문에 자리 (\d+)/(\d+)")


def class_walk(front: str, pages: int = 3, walk_ins: int = 4) -> None:
    """`pages` pages fire ② 12 together with "거절되면 다시 오기" (each refusal comes back after its Retry-After with
    its Seat-Hold); a walk-in page fires ② `walk_ins` times, 5 s apart from 2.5 s, without coming back: returners
    seated on their first return, and walk-ins served (docs/held-seats.md)."""
    from playwright.sync_api import sync_playwright  # the dev extra: only this check needs a browser

    wait_idle(front)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            tabs = [browser.new_context(ignore_https_errors=True).new_page() for _ in range(pages + 1)]
            for tab in tabs:
                tab.goto(f"{front}/", wait_until="load")
                tab.check("input[name=path][value=limited]")
                tab.check("input[name=mode][value=distinct]")
            *classmates, walker = tabs
            for tab in classmates:
                tab.fill("#burst-size", "12")
                tab.check("#retry")
            walker.fill("#burst-size", "1")
            started = time.monotonic()
            for tab in classmates:
                tab.click("#fire")
            walked: list[str] = []
            for k in range(walk_ins):
                time.sleep(max(0.0, started + 2.5 + 5 * k - time.monotonic()))
                walker.click("#fire")
                walker.wait_for_selector("#burst-status[data-state=done]", timeout=600_000)
                walked += [page_label(*row) for row in walker.eval_on_selector_all("#rows tbody tr", PAGE_ANSWERS)]
            seated = returners = 0
            for tab in classmates:
                tab.wait_for_selector("#burst-status[data-state=done]", timeout=600_000)
                found = SEATED.search(tab.inner_text("#summary"))
                if found:
                    seated, returners = seated + int(found[1]), returners + int(found[2])
            emit(
                check="class walk",
                pages=pages,
                returners=returners,
                seated_first_return=seated,
                walk_ins=tally(walked),
                holds=box_back(front)["holds"],
            )
        finally:
            browser.close()


def class_view(front: str, token: str, pages: int, box_port: int) -> None:
    """The class view walked: tools/class_view_walk.py, one row a check."""
    from playwright.sync_api import sync_playwright  # the dev extra: only this check needs a browser

    from tools.class_view_walk import walk

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            scripts = [SCHOOL] * 3 if ONE_ADDRESS else None
            walk(browser, front, token, pages=pages, box_port=box_port, emit=emit, script_from=scripts)
        finally:
            browser.close()


def flood(front: str, n: int = 500, classmates: int = 11) -> None:
    """One student's key sends `n` ② at once (a script, HTTP/1.1) while `classmates` pages send 12 each."""
    import asyncio
    import secrets

    async def fire(client: httpx.AsyncClient, k: int, tag: str) -> list[str]:
        async def one(i: int) -> str:
            try:
                r = await client.post(f"{front}/api/limited/predict", json={"text": f"홍수 리뷰 {tag} {i}"})
            except httpx.HTTPError:
                return "0"
            return label(r.status_code, r.json().get("error") if r.status_code == 429 else None)

        return list(await asyncio.gather(*(one(i) for i in range(k))))

    def client(source: str, connections: int, http2: bool) -> httpx.AsyncClient:
        transport = httpx.AsyncHTTPTransport(
            verify=False, http2=http2, local_address=source, limits=httpx.Limits(max_connections=connections)
        )
        return httpx.AsyncClient(transport=transport, timeout=120, cookies={"lab_student": secrets.token_urlsafe(16)})

    async def run() -> tuple[list[str], list[str]]:
        flooder = client(student(0), n, False)
        others = [client(student(i + 1), 1, True) for i in range(classmates)]
        flooding = asyncio.ensure_future(fire(flooder, n, "flood"))
        await asyncio.sleep(0.5)
        theirs = await asyncio.gather(*(fire(c, 12, str(i)) for i, c in enumerate(others)))
        mine = await flooding
        for c in (flooder, *others):
            await c.aclose()
        return mine, [a for page in theirs for a in page]

    wait_idle(front)
    mine, theirs = asyncio.run(run())
    emit(check="flood", one_key=tally(mine), classmates=tally(theirs), one_address=ONE_ADDRESS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("front", help="the classroom front, e.g. https://127.0.0.1:8443")
    parser.add_argument("--token", required=True, help="the instructor token the box printed at start-up")
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--pages", type=int, default=12)
    parser.add_argument("--walk-ins", type=int, default=2)
    parser.add_argument("--only", default="naive,limited,no-show,token,pages,flood,walk,classview")
    parser.add_argument("--box-port", type=int, default=8000, help="the box's own port behind the front (LAB_PORT)")
    parser.add_argument("--one-address", action="store_true", help="the whole class from 127.0.0.9 (a school's NAT)")
    args = parser.parse_args()
    global ONE_ADDRESS
    ONE_ADDRESS = args.one_address
    front = args.front.rstrip("/")
    emit(check="start", front=front, one_address=ONE_ADDRESS)
    if "naive" in args.only:
        for n in (12, 8):
            for client in ("burst.py", "page"):
                naive_tries(front, n, args.tries, client)
    if "limited" in args.only:
        limited_class(front, args.pages)
    if "no-show" in args.only:
        no_show_cost(front, args.pages, args.walk_ins)
    if "pages" in args.only:
        class_pages(front, args.pages)
    if "flood" in args.only:
        flood(front)
    if "walk" in args.only:
        class_walk(front)
    if "classview" in args.only:
        class_view(front, args.token, args.pages, args.box_port)
    if "token" in args.only:
        turn_a_knob(front, args.token)


if __name__ == "__main__":
    main()
