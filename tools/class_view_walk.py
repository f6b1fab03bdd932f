"""The class view (/class) walked as a class uses it, through the front: issue 44's "done when", one JSON row a check.

`pages` student pages in Chromium (each its own `lab_student` key, from 127.0.0.1) and three `burst.py` runs (each
its own key, from 127.0.0.2-4) fire ①–⑤ in rounds while the instructor's /class follows the lesson:

  ② `pages` × 12 and burst.py 12 · ③ `pages` × 4 · ④ `pages` × 3 · ⑤ `pages` × 12 and burst.py 12 ·
  ① 12 from one page (the box dies) · ① 12 from burst.py under a paused view (① 12 is at the cap's edge: it may
  live)

and checks, each row with `ok`:

- `round`: the view's tally of the path's last burst (requests, served, refused) against the students' summaries
  (each page's summary line, burst.py's `--json` summary), and the record's requests of the round against
  /api/stats over the round (refusals by reason, ④'s tickets done, the lane's turns, the box's deaths);
- `student`: every answer each student saw (its status, Server-Timing's wait and infer; the front's 502 for a request
  the box died holding) is one request of the record, and the record holds nothing else of theirs;
- `death`: one death mark per death, within 1 s of the moment the box's server process ended (polled every 10 ms
  from this machine), its cut requests answered at it; when the view drew its own 연결 끊김 and the box's mark;
  on the view's picture the mark's column crosses every lane;
- `tallies`: the view's tallies of the whole lesson against the record;
- `replay`: pause holds the picture while requests arrive and the box dies and comes back (the view says 멈춤 after
  it reconnects); from the live edge ◀ 이전 goes half a window back and draws the record's requests there, 다음 ▶
  half a window on, ● 지금 live again;
- `export`: JSON 내려받기 and CSV 내려받기 on the view, and ?format=csv, give the record's requests;
- `axe`: nothing serious or critical on /class.

Run by `python -m tools.class_check FRONT --token T --only classview` against `just classroom`, and by
tests/front/test_front_class_view_live.py against the front with the tiny model (fewer pages).
"""

import csv
import io
import json
import re
import secrets
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from app.host import cpu_model
from kit.host import load_average, machine
from kit.serverproc import wait_healthy
from tools.class_check import burst_command

Emit = Callable[..., None]
Page = Any  # playwright's sync Page (the dev extra: imported only where a browser runs)

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
GUARD_S = 600.0  # failure guards for waits, never delays
BURST_GAP_S = 10.0  # static/js/classdata.js: a path's last burst is its arrivals since a quiet gap this long
DEATH_WITHIN_S = 1.0
DEATH_COLOUR = (0xA3, 0x00, 0x0B)  # MARKS.death in static/js/classdata.js
NICKNAMES = ["민지", "서준", "하은", "도윤", "지우", "예준"]  # every other page gives one
SCRIPT_FROM = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]  # each burst.py run a laptop of its own


@dataclass(frozen=True)
class Round:
    path: str
    per_page: int  # 0: no page fires
    pages: int | None = None  # how many pages fire (None: all)
    script: int = 0  # a burst.py run fires this many at the path with the pages (0: none)


ROUNDS = [
    Round("limited", 12, script=12),
    Round("batched", 4),
    Round("tickets", 3),
    Round("adaptive", 12, script=12),
    Round("naive", 12, pages=1),  # ① 12 over HTTP/2: twelve at once on the box, which dies at its cap
    Round("naive", 0, pages=0, script=12),  # and from burst.py, once the box is back
]

READ_ROWS = """() => [...document.querySelectorAll('#rows tbody tr')].map((tr) => ({
  status: Number(tr.dataset.status || 0), wait: tr.dataset.waitMs ?? null, infer: tr.dataset.inferMs ?? null,
  cache: tr.dataset.cache ?? null, batch: Number(tr.dataset.batchSize || 1),
  front: tr.querySelector('td.status').textContent.includes('front_limit'),
  said: tr.querySelector('td.status').title || tr.querySelector('td.status').textContent}))"""
READ_SUMMARY = """() => ({counts: JSON.parse(document.getElementById('summary').dataset.counts || '{}'),
  text: document.getElementById('summary').textContent})"""
READ_TALLY = """(path) => [...document.querySelectorAll(`#class-tallies tr[data-path=${path}] td`)]
  .map((td) => td.textContent)"""
ROWS_DONE = """() => document.getElementById('burst-status').dataset.state === 'done'
  && [...document.querySelectorAll('#rows tbody tr')].every((tr) => tr.dataset.state === 'done')"""
# When the view first drew each line across its lanes (Date.now(), this machine's clock, as the box's).
WATCH_MARKS = """() => { window.marksSeen = {}; const note = () => {
  for (const li of document.querySelectorAll('#class-marks li')) {
    const key = `${li.dataset.kind}@${li.dataset.at}`;
    if (!(key in window.marksSeen)) window.marksSeen[key] = Date.now();
  } };
  note(); new MutationObserver(note).observe(document.getElementById('class-marks'), {childList: true}); }"""
# The share of the canvas's rows, from the lanes' top down, whose pixels within 3 px of `x` have the death's colour.
COLUMN = """([x, top, colour]) => {
  const canvas = document.getElementById('class-canvas');
  const ratio = canvas.width / canvas.clientWidth;
  const left = Math.max(0, Math.round(x * ratio) - 3);
  const y0 = Math.round(top * ratio);
  const data = canvas.getContext('2d').getImageData(left, y0, 7, canvas.height - y0).data;
  let rows = 0, crossed = 0;
  for (let y = 0; y < canvas.height - y0; y += 1) {
    rows += 1;
    for (let i = 0; i < 7; i += 1) {
      const p = (y * 7 + i) * 4;
      if (data[p] === colour[0] && data[p + 1] === colour[1] && data[p + 2] === colour[2]) { crossed += 1; break; }
    }
  }
  return [crossed, rows];
}"""
LANES_TOP = 76  # static/js/classdraw.js AXIS_H: the lanes start under the marks' words and the clock
RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map((v) => ({id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(" "))}));
}"""


@dataclass
class Student:
    """One student: a page (its key from the box's cookie) or one burst.py run (a key of its own)."""

    key: str
    kind: str  # "page" or "burst.py"
    page: Page = None
    name: str = ""
    seen: list[dict[str, Any]] = field(default_factory=list)  # every answer, as its screen showed it, with its path


def seen_key(status: int, wait: Any, infer: Any) -> tuple[str, str, str]:
    """An answer as it can be held against the record: a request the box died holding is the front's 502 (or no
    answer at all) to its student and `cut` in the record; times to the 0.1 ms they are written."""
    shown = "cut" if status in (0, 502) else str(status)
    return (shown, *("-" if v is None else f"{float(v):.1f}" for v in (wait, infer)))  # type: ignore[return-value]


def record_key(r: dict[str, Any]) -> tuple[str, str, str]:
    status = 0 if r["outcome"] == "cut" else r["status"]
    return seen_key(status, r["wait_ms"], r["infer_ms"])


def served(r: dict[str, Any]) -> bool:
    """Served as the view and the students count it: a 2xx, and for a ticket its end (done)."""
    return bool(r["ticket_status"] == "done") if r["ticket"] else r["outcome"] == "served"


class Lesson:
    """The instructor's API through the front: the record, /api/stats."""

    def __init__(self, front: str, token: str) -> None:
        self.front = front
        self.client = httpx.Client(
            base_url=front, verify=False, timeout=60, headers={"Authorization": f"Bearer {token}"}
        )

    def requests(self, **params: Any) -> dict[str, Any]:
        answer = self.client.get("/api/class/requests", params=params)
        answer.raise_for_status()
        body: dict[str, Any] = answer.json()
        return body

    def stats(self) -> dict[str, Any]:
        body: dict[str, Any] = self.client.get("/api/stats").json()
        return body

    def back(self) -> dict[str, Any]:
        wait_healthy(self.front, limit_s=GUARD_S, verify=False)
        return self.stats()

    def idle(self) -> None:
        """Until nothing is in flight or waiting on any path and no ticket is queued or running."""
        deadline = time.monotonic() + GUARD_S
        while time.monotonic() < deadline:
            body = self.back()
            jobs = body["jobs"]
            if not any(p["in_flight"] or p["waiting"] for p in body["paths"].values()) and not (
                jobs["queued"] or jobs["running"]
            ):
                return
            time.sleep(0.2)
        raise TimeoutError("the box never went idle")

    def quiet(self, path: str) -> None:
        """Until the path has had no arrival for BURST_GAP_S: the round that follows is the view's last burst."""
        while True:
            recent = self.requests(path=path, since=time.time() - 2 * BURST_GAP_S)["requests"]
            last = max((r["arrived"] for r in recent), default=0.0)
            left = last + BURST_GAP_S + 0.5 - time.time()
            if left <= 0:
                return
            time.sleep(left)

    def close(self) -> None:
        self.client.close()


class DeathWatch:
    """The box's server process (its supervisor's one child), polled every 10 ms from this machine: when each one
    ended, as near as a poll sees the kernel's kill. The supervisor is the `app.box` serving `box_port`."""

    def __init__(self, box_port: int) -> None:
        self.supervisor = next(
            p
            for p in psutil.process_iter(["cmdline"])
            if "app.box" in (cmd := p.info["cmdline"] or []) and "--port" in cmd and str(box_port) in cmd
        )
        self.ended: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="death-watch", daemon=True)

    def __enter__(self) -> "DeathWatch":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def _server(self) -> psutil.Process | None:
        try:
            children = self.supervisor.children()
        except psutil.Error:
            return None
        return children[0] if len(children) == 1 else None

    def _watch(self) -> None:
        server, gone = None, set()  # a dead server stays the supervisor's child until it is reaped: seen once
        while not self._stop.is_set():
            if server is None:
                server = self._server()
                if server is not None and server.pid in gone:
                    server = None
                time.sleep(0.1 if server is None else 0.01)
                continue
            try:
                ended = server.status() == psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                ended = True
            if ended:
                self.ended.append(time.time())
                gone.add(server.pid)
                server = None
            time.sleep(0.01)


# ---------------------------------------------------------------------------------------------------- the browser


def open_student(browser: Any, front: str, i: int) -> Student:
    page = browser.new_context(viewport={"width": 1366, "height": 900}, locale="ko-KR", ignore_https_errors=True)
    tab = page.new_page()
    tab.goto(f"{front}/", wait_until="load")
    tab.wait_for_function("document.getElementById('box-panel').dataset.channel !== 'connecting'")
    key = next(c["value"] for c in tab.context.cookies() if c["name"] == "lab_student")
    student = Student(key, "page", tab)
    if i % 2 == 0:
        student.name = f"{NICKNAMES[(i // 2) % len(NICKNAMES)]}{i // 2 // len(NICKNAMES) or ''}"
        tab.wait_for_selector("#nickname:not([hidden])", timeout=GUARD_S * 1000)
        tab.fill("#nickname-name", student.name)
        tab.click("#nickname button")
        tab.wait_for_selector("#nickname-result[data-status='200']", timeout=GUARD_S * 1000)
    return student


def open_view(browser: Any, front: str, token: str, errors: list[str]) -> Page:
    """The projector's /class at 1920×1080; its JavaScript errors go to `errors`."""
    context = browser.new_context(
        viewport={"width": 1920, "height": 1080}, locale="ko-KR", ignore_https_errors=True, accept_downloads=True
    )
    view = context.new_page()
    view.on("pageerror", lambda exc: errors.append(str(exc)))
    view.goto(f"{front}/class?token={token}")
    view.wait_for_selector("#class-link[data-state=live]", timeout=GUARD_S * 1000)
    view.evaluate(WATCH_MARKS)
    return view


def fire_page(tab: Page, path: str, n: int) -> None:
    tab.check(f"input[name=path][value={path}]")
    tab.check("input[name=mode][value=distinct]")
    tab.fill("#burst-size", str(n))
    tab.click("#fire")
    tab.wait_for_selector(f"#rows[data-path={path}]")


def page_summary(tab: Page) -> dict[str, Any]:
    """The page's summary line as its student reads it: counts by status, served of how many, refused by whom."""
    got = tab.evaluate(READ_SUMMARY)
    text = got["text"]
    served_of = re.search(r"처리됨 (\d+)/(\d+)", text)
    front = re.search(r"\(429 front_limit\) (\d+)", text)
    assert served_of, text
    counts = {k: int(v) for k, v in got["counts"].items()}
    front_n = int(front[1]) if front else 0
    return {
        "requests": int(served_of[2]),
        "served": int(served_of[1]),
        "refused": counts.get("429", 0) - front_n + counts.get("503", 0),
        "front_limit": front_n,
        "counts": counts,
    }


# --------------------------------------------------------------------------------------------------- burst.py


@contextmanager
def burst_run(front: str, n: int, path: str, source: str) -> Iterator[Callable[[], tuple[Student, dict[str, Any]]]]:
    """A student's burst.py run from `source`, fired on entry; the block's result waits for it to end."""
    key = secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory() as work:
        out = Path(work) / "burst.json"
        command = [*burst_command(front, n, path, out, source), "--student", key]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

        def result() -> tuple[Student, dict[str, Any]]:
            _, err = process.communicate(timeout=GUARD_S)
            if not out.exists():  # burst.py says why in its one line
                raise RuntimeError(f"burst.py exited {process.returncode}: {err.decode(errors='replace')[-2000:]}")
            report = json.loads(out.read_text("utf-8"))
            assert report.get("student") == key, err.decode(errors="replace")[-2000:]
            student = Student(key, "burst.py")
            (burst,) = report["bursts"]
            for row in burst["rows"]:
                status = row.get("status") or 0
                front_limit = row.get("refused_by") == "front"
                saw = {
                    "status": status,
                    "wait": row.get("wait_ms"),
                    "infer": row.get("infer_ms"),
                    "cache": row.get("cache"),
                    "batch": row.get("batch_size") or 1,
                    "said": row.get("error"),
                }
                student.seen.append({**saw, "path": path, "front": front_limit})
            s = burst["summary"]
            summary = {
                "requests": s["size"] - s["refused"].get("front", 0),
                "served": s["served"],
                "refused": s["refused"].get("box", 0) + s["refused"].get("unknown", 0) + s["counts"].get("503", 0),
                "front_limit": s["refused"].get("front", 0),
                "counts": s["counts"],
            }
            return student, summary

        yield result
        if process.poll() is None:
            process.kill()
            process.wait()


# ------------------------------------------------------------------------------------------------------ the walk


def by_reason(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    found: dict[str, Counter[str]] = {}
    for r in records:
        if r["outcome"] in ("refused", "late"):
            found.setdefault(r["path"], Counter())[r["reason"] or r["error"]] += 1
    return {path: dict(c) for path, c in found.items()}


def stats_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What /api/stats counted over a round (its counters are an incarnation's: a round with a death has none)."""
    refusals: dict[str, dict[str, int]] = {}
    for path, reasons in after["rejections"].items():
        counted = {r: n - before["rejections"][path].get(r, 0) for r, n in reasons.items()}
        if any(counted.values()):
            refusals[path] = {r: n for r, n in counted.items() if n}
    return {
        "refusals": refusals,
        "tickets_done": after["jobs"]["done"] - before["jobs"]["done"],
        "lane_turns": after["lane"]["completed"] - before["lane"]["completed"],
        "deaths": after["box"]["deaths"] - before["box"]["deaths"],
    }


def view_tally(view: Page, path: str) -> dict[str, Any]:
    cells = view.evaluate(READ_TALLY, path)

    def number(text: str) -> int:
        return int(text.split()[0])  # "12 (자리 없음 7)" → 12

    return {
        "last_burst": {"requests": number(cells[0]), "served": number(cells[1]), "refused": number(cells[2]),
                       "p50_p95": cells[3], "longest": cells[4]},
        "lesson": {"requests": number(cells[5]), "served": number(cells[6]), "refused": number(cells[7]),
                   "cut": number(cells[8]), "p50_p95": cells[9]},
    }  # fmt: skip


def until(check: Callable[[], Any], limit_s: float = 60.0) -> Any:
    """`check()`'s first value that is not None, polled; None if none came within `limit_s` (a failure guard)."""
    deadline = time.monotonic() + limit_s
    while True:
        value = check()
        if value is not None or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def play_round(
    lesson: Lesson,
    view: Page,
    pages: list[Student],
    scripts: list[Student],
    r: Round,
    front: str,
    script_from: list[str],
    emit: Emit,
) -> None:
    """One round: the pages (and a burst.py run) fire together; the view's last burst against what they saw, the
    record's requests of the round against /api/stats over it."""
    lesson.idle()
    lesson.quiet(r.path)
    before_stats = lesson.back()
    first_id = max((x["id"] for x in lesson.requests(since=time.time() - 5)["requests"]), default=0)
    firing = (pages[: r.pages] if r.pages is not None else pages) if r.per_page else []
    summaries: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []  # every answer of the round, as its student saw it
    started = time.time()
    source = script_from[len(scripts) % len(script_from)]
    running: AbstractContextManager[Callable[[], tuple[Student, dict[str, Any]]] | None] = (
        burst_run(front, r.script, r.path, source) if r.script else nullcontext()
    )
    with running as script:
        for s in firing:
            fire_page(s.page, r.path, r.per_page)
        for s in firing:
            s.page.wait_for_function(ROWS_DONE, timeout=GUARD_S * 1000)
            saw = [{**row, "path": r.path} for row in s.page.evaluate(READ_ROWS)]
            s.seen += saw
            rows += saw
            summaries.append(page_summary(s.page))
        if script is not None:
            student, summary = script()
            scripts.append(student)
            rows += student.seen
            summaries.append(summary)
    lesson.idle()
    mine = [x for x in lesson.requests(since=started - 1)["requests"] if x["id"] > first_id]
    after_stats = lesson.back()
    together = {k: sum(s[k] for s in summaries) for k in ("requests", "served", "refused", "front_limit")}
    expected = {k: together[k] for k in ("requests", "served", "refused")}

    def shown() -> dict[str, Any] | None:
        last: dict[str, Any] = view_tally(view, r.path)["last_burst"]
        return last if all(last[k] == v for k, v in expected.items()) else None

    matched = until(shown, 30)
    delta = stats_delta(before_stats, after_stats)
    # The lane's turns the students' answers took: a batch of k is one turn (each of its k answers says k); a cached
    # answer took none. The record's served requests must be those answers, less the cached ones.
    lane = [x for x in rows if x["path"] != "naive" and x["status"] in (200, 202) and x["cache"] != "hit"]
    cached = sum(1 for x in rows if x["cache"] == "hit")
    record = {
        "requests": len(mine),
        "refusals": by_reason(mine),
        "tickets_done": sum(1 for x in mine if x["ticket_status"] == "done"),
        "served_on_the_lane": sum(1 for x in mine if served(x) and x["path"] != "naive") - cached,
    }
    turns = round(sum(1 / x["batch"] for x in lane))
    died = delta["deaths"] > 0  # /api/stats counts an incarnation's: the next one's start from nothing
    checks = {
        "view_is_students": matched is not None,
        "record_is_students": len(mine) == together["requests"],
        "refusals_are_stats": died or record["refusals"] == delta["refusals"],
        "tickets_are_stats": died or record["tickets_done"] == delta["tickets_done"],
        "lane_is_stats": died or (record["served_on_the_lane"] == len(lane) and turns == delta["lane_turns"]),
    }
    emit(
        check="round",
        path=r.path,
        pages=len(firing),
        per_page=r.per_page,
        script=r.script,
        students_summaries=together,
        view_last_burst=view_tally(view, r.path)["last_burst"],
        record=record,
        students_lane_turns=turns,
        stats=delta,
        checks=checks,
        ok=all(checks.values()),
    )


def check_students(students: list[Student], records: list[dict[str, Any]], emit: Emit) -> bool:
    """Every answer each student saw is one request of the record, and the record holds nothing else of theirs."""
    ok = True
    for s in students:
        reached = [x for x in s.seen if not x["front"]]
        saw = sorted(seen_key(x["status"], x["wait"], x["infer"]) for x in reached)
        theirs = [r for r in records if r["student"] == s.key]
        kept = sorted(record_key(r) for r in theirs)
        same = saw == kept
        named = s.name == "" or all(r["name"] == s.name for r in theirs)
        missing = [
            {**x, "as": k}
            for x in reached
            if (k := seen_key(x["status"], x["wait"], x["infer"])) in (Counter(saw) - Counter(kept))
        ]
        extra = list((Counter(kept) - Counter(saw)).elements())
        emit(
            check="student",
            kind=s.kind,
            name=s.name or (theirs[0]["name"] if theirs else None),
            saw=len(s.seen),
            front_limit=len(s.seen) - len(reached),
            in_record=len(theirs),
            statuses=dict(Counter(k[0] for k in saw)),
            missing=missing[:5],
            extra=extra[:5],
            ok=same and named,
        )
        ok = ok and same and named
    return ok


def check_deaths(
    lesson: Lesson,
    view: Page,
    watch: DeathWatch,
    began: float,
    paused: tuple[float, float],
    records: list[dict[str, Any]],
    emit: Emit,
) -> None:
    """Each death the watch saw: its one mark (within DEATH_WITHIN_S), its cut requests, the view's line across every
    lane, and when the view said so (a view paused over the death draws neither until it is live again)."""
    body = lesson.requests(since=began)
    deaths = [m for m in body["marks"] if m["kind"] == "death" and m["at"] >= began]
    view.select_option("#class-span", "1800")  # the whole walk in the window
    view.click("#class-now")
    seen_at = view.evaluate("window.marksSeen")
    drawn = {
        li["at"]: li
        for li in view.eval_on_selector_all(
            "#class-marks li", "lis => lis.map((li) => ({...li.dataset, text: li.textContent}))"
        )
    }
    for n, ended in enumerate(watch.ended):
        mark = min(deaths, key=lambda m: abs(m["at"] - ended), default=None)
        if mark is None:
            emit(check="death", n=n + 1, ended=round(ended, 3), mark=None, ok=False)
            continue
        cut = [r for r in records if r["outcome"] == "cut" and r["incarnation"] == mark_incarnation(body, mark)]
        line = drawn.get(f"{mark['at']:.3f}")
        crossed = view.evaluate(COLUMN, [float(line["x"]), LANES_TOP, list(DEATH_COLOUR)]) if line else [0, 1]
        lost = [t for key, t in seen_at.items() if key.startswith("lost@") and -1 <= float(key[5:]) - ended <= 30]
        shown = seen_at.get(f"death@{mark['at']:.3f}")
        row = {
            "check": "death",
            "n": n + 1,
            "cause": mark.get("cause"),
            "mark_after_death_s": round(mark["at"] - ended, 3),
            "cut": len(cut),
            "cut_answered_at_the_mark": all(r["answered"] == mark["at"] for r in cut),
            "view_paused": paused[0] <= ended <= paused[1],
            "view_said_lost_after_s": round(min(lost) / 1000 - ended, 3) if lost else None,
            "view_drew_mark_after_s": round(shown / 1000 - ended, 3) if shown else None,
            "view_line": line["text"] if line else None,
            "column_rows_crossed": f"{crossed[0]}/{crossed[1]}",
        }
        row["ok"] = (
            abs(row["mark_after_death_s"]) < DEATH_WITHIN_S
            and row["cut_answered_at_the_mark"]
            and line is not None
            and crossed[0] == crossed[1]
        )
        emit(**row)
    lines = sum(1 for li in drawn.values() if li["kind"] == "death" and float(li["at"]) >= began)
    emit(
        check="deaths",
        ended_seen=len(watch.ended),
        death_marks=len(deaths),
        view_death_lines=lines,
        ok=len(deaths) == len(watch.ended) == lines,
    )


def mark_incarnation(body: dict[str, Any], death: dict[str, Any]) -> int:
    """The incarnation a death ended: the one started last before it."""
    starts = [m for m in body["marks"] if m["kind"] == "start" and m["at"] <= death["at"]]
    return int(max(starts, key=lambda m: m["at"])["incarnation"]) if starts else 0


def check_tallies(lesson: Lesson, view: Page, emit: Emit) -> None:
    """The view's tallies of the whole lesson against the record (the view holds the whole record)."""
    records = lesson.requests()["requests"]
    view.wait_for_function(
        f"document.getElementById('class-summary').textContent.includes('요청 {len(records)}개')",
        timeout=GUARD_S * 1000,
    )
    for path in sorted({r["path"] for r in records}):
        on = [r for r in records if r["path"] == path]
        want = {
            "requests": len(on),
            "served": sum(served(r) for r in on),
            "refused": sum(r["outcome"] in ("refused", "late") for r in on),
            "cut": sum(r["outcome"] == "cut" for r in on),
        }

        def same(path: str = path, want: dict[str, int] = want) -> dict[str, Any] | None:
            shown: dict[str, Any] = view_tally(view, path)["lesson"]
            return shown if all(shown[k] == v for k, v in want.items()) else None

        got = until(same)
        emit(check="tallies", path=path, record=want, view=view_tally(view, path)["lesson"], ok=got is not None)


def canvas(view: Page) -> dict[str, str]:
    got: dict[str, str] = view.evaluate("({...document.getElementById('class-canvas').dataset})")
    return got


def in_window(records: list[dict[str, Any]], t0: float, t1: float) -> int:
    return sum(1 for r in records if r["arrived"] < t1 and (r["ticket_end"] or r["answered"] or t1) > t0)


def check_replay(view: Page, lesson: Lesson, held: dict[str, str], held_count: int, emit: Emit) -> None:
    """After a round fired while paused: the picture held. Then from the live edge, ◀ 이전 half a window back (the
    record's requests there drawn), 다음 ▶ half a window on, ● 지금 live again."""
    records = lesson.requests()
    count = len(records["requests"])
    view.wait_for_function(
        f"document.getElementById('class-summary').textContent.includes('요청 {count}개')", timeout=GUARD_S * 1000
    )
    still = canvas(view)
    span = float(held["to"]) - float(held["from"])
    view.click("#class-now")
    clicked = time.time()
    view.click("#class-earlier")
    back = canvas(view)
    began = min([r["arrived"] for r in records["requests"]] + [m["at"] for m in records["marks"]])
    want_to = max(began + 1, clicked - span / 2)
    drawn_back = int(back["requests"])
    expect_back = in_window(records["requests"], float(back["from"]), float(back["to"]))
    view.click("#class-later")
    forth = canvas(view)
    view.click("#class-now")
    live = view.get_attribute("#class-pause", "aria-pressed") == "false"
    now = canvas(view)
    row = {
        "check": "replay",
        "span_s": span,
        "held_while_requests_arrived": still["to"] == held["to"],
        "requests_when_paused_and_now": [held_count, count],
        "back_from_now_s": round(float(back["to"]) - clicked, 3),
        "back_requests_drawn_and_in_record": [drawn_back, expect_back],
        "forth_s": round(float(forth["to"]) - float(back["to"]), 3),
        "live_again_to_now_s": round(time.time() - float(now["to"]), 1),
        "live_again": live,
    }
    row["ok"] = (
        row["held_while_requests_arrived"]
        and held_count < count
        and abs(float(back["to"]) - want_to) < 1
        and drawn_back == expect_back > 0
        and abs(row["forth_s"] - span / 2) < 1
        and live
        and abs(row["live_again_to_now_s"]) < 2
    )
    emit(**row)


def check_export(view: Page, lesson: Lesson, emit: Emit) -> None:
    ids = sorted(r["id"] for r in lesson.requests()["requests"])
    with view.expect_download() as saved:
        view.click("#class-json")
    as_json = json.loads(Path(saved.value.path()).read_text("utf-8"))
    with view.expect_download() as saved:
        view.click("#class-csv")
    as_csv = list(csv.DictReader(io.StringIO(Path(saved.value.path()).read_text("utf-8"))))
    api_csv = list(csv.DictReader(io.StringIO(lesson.client.get("/api/class/requests?format=csv").text)))
    got = {
        "json_button": sorted(r["id"] for r in as_json["requests"]),
        "csv_button": sorted(int(r["id"]) for r in as_csv),
        "csv_api": sorted(int(r["id"]) for r in api_csv),
    }
    emit(
        check="export",
        requests=len(ids),
        **{k: len(v) for k, v in got.items()},
        names_kept=sorted({r["name"] for r in as_csv})[:20],
        ok=all(v == ids for v in got.values()),
    )


def check_axe(view: Page, errors: list[str], emit: Emit) -> None:
    view.add_script_tag(path=str(AXE))
    found = [v for v in view.evaluate(RUN_AXE) if v["impact"] in ("serious", "critical")]
    emit(check="axe", serious_or_critical=found, page_errors=errors, ok=not found and not errors)


def walk(
    browser: Any,
    front: str,
    token: str,
    *,
    pages: int,
    box_port: int,
    emit: Emit,
    script_from: list[str] | None = None,
) -> None:
    """The whole walk; each check is one `emit(check=..., ok=...)` row. burst.py's runs leave from `script_from`'s
    loopback addresses in turn (default SCRIPT_FROM)."""
    lesson = Lesson(front, token)
    sources = script_from or SCRIPT_FROM
    began = time.time()
    results: list[bool] = []
    told = emit

    def counted(**row: Any) -> None:
        if "ok" in row:
            results.append(bool(row["ok"]))
        told(**row)

    emit = counted
    try:
        errors: list[str] = []
        view = open_view(browser, front, token, errors)
        class_ = [open_student(browser, front, i) for i in range(pages)]
        scripts: list[Student] = []
        box = lesson.stats()["box"]
        emit(
            check="classview start",
            pages=pages,
            keys=len({s.key for s in class_}),
            front=front,
            host=f"{machine()} ({cpu_model()})",
            load=load_average(),
            box_speed=box["speed"],
            incarnation=box["incarnation"],
        )
        with DeathWatch(box_port) as watch:
            for r in ROUNDS[:-1]:
                play_round(lesson, view, class_, scripts, r, front, sources, emit)
            lesson.back()
            view.wait_for_selector("#class-link[data-state=live]", timeout=GUARD_S * 1000)
            view.select_option("#class-span", "60")  # a minute: half of it back and forth stays inside the walk
            view.click("#class-pause")
            held, held_count = canvas(view), len(lesson.requests()["requests"])
            play_round(
                lesson, view, class_, scripts, ROUNDS[-1], front, sources, emit
            )  # the box dies under a paused view
            lesson.back()
            view.wait_for_selector("#class-link[data-state=paused]", timeout=GUARD_S * 1000)  # back, still paused
        paused = (float(held["to"]), time.time())
        check_replay(view, lesson, held, held_count, emit)
        records = lesson.requests()["requests"]
        check_students([*class_, *scripts], records, emit)
        check_deaths(lesson, view, watch, began, paused, records, emit)
        check_tallies(lesson, view, emit)
        check_export(view, lesson, emit)
        check_axe(view, errors, emit)
        for s in class_:
            s.page.context.close()
        view.context.close()
        told(
            check="classview end",
            seconds=round(time.time() - began),
            checks=len(results),
            failed=results.count(False),
            load=load_average(),
        )
    finally:
        lesson.close()


def main(argv: list[str] | None = None) -> None:
    """The walk alone (the same as `python -m tools.class_check … --only classview`)."""
    import argparse

    from tools.class_check import class_view

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("front", help="the classroom front, e.g. https://127.0.0.1:8443")
    parser.add_argument("--token", required=True, help="the instructor token the box printed at start-up")
    parser.add_argument("--pages", type=int, default=12, help="student pages in Chromium")
    parser.add_argument("--box-port", type=int, required=True, help="the box's own port (its deaths are watched)")
    args = parser.parse_args(argv)
    class_view(args.front, args.token, args.pages, args.box_port)


if __name__ == "__main__":
    main()
