// The class view (/class?token=…): the lesson from its one live socket, drawn as lanes, with the tallies under
// them. Pause, scroll back over the lesson, download it. The token comes from this page's address, as on /instructor.
import { Lesson, OUTCOMES, MARKS, REASONS, isServed, lastBurst, tally } from "./classdata.js";
import { drawLanes } from "./classdraw.js";
import { el, fmtMs } from "./dom.js";
import { PATHS } from "./paths.js";

const token = new URLSearchParams(location.search).get("token") || "";
const DRAW_EVERY_MS = 500; // bars still waiting grow with the clock
const RECONNECT_MS = 1000;
const lesson = new Lesson();
const canvas = document.getElementById("class-canvas");
const view = { live: true, span: 180, end: null }; // end: the window's right edge while not live (epoch s)
let socket = null;
let drawn = null;

function setLink(state, words) {
  const link = document.getElementById("class-link");
  link.dataset.state = state;
  link.textContent = words;
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  socket = new WebSocket(`${scheme}://${location.host}/api/class/live?token=${encodeURIComponent(token)}`);
  socket.addEventListener("open", () => (view.live ? setLink("live", "실시간") : setLink("paused", "멈춤")));
  socket.addEventListener("message", (event) => {
    lesson.apply(JSON.parse(event.data));
    document.body.dataset.version = String(lesson.entries.size);
    draw();
  });
  socket.addEventListener("close", (event) => {
    if (event.code === 1008) {
      setLink("down", "토큰이 맞지 않습니다: 상자가 시작할 때 출력한 강사용 주소의 토큰으로 여세요");
      return;
    }
    if (lesson.incarnation !== null) lesson.dropped(); // the box may have died: a mark now, its own on return
    setLink("down", "상자에 닿지 않습니다: 죽었거나 다시 켜지는 중 (살아나면 이어집니다)");
    draw();
    setTimeout(connect, RECONNECT_MS);
  });
}

function windowNow() {
  const now = lesson.now();
  const end = view.live ? now : Math.min(view.end ?? now, now);
  return [end - view.span, end];
}

function draw() {
  const [t0, t1] = windowNow();
  drawn = drawLanes(canvas, lesson, t0, t1);
  const counts = Object.entries(drawn.counts)
    .map(([outcome, n]) => `${OUTCOMES[outcome]?.label || outcome} ${n}`)
    .join(", ");
  canvas.setAttribute(
    "aria-label",
    `학생 ${drawn.students}명의 요청 ${drawn.requests}개 (${new Date(t0 * 1000).toLocaleTimeString("ko-KR")}부터 ` +
      `${new Date(t1 * 1000).toLocaleTimeString("ko-KR")}까지)${counts ? `: ${counts}` : ""}`,
  );
  Object.assign(canvas.dataset, { from: t0.toFixed(3), to: t1.toFixed(3) });
  canvas.dataset.students = String(drawn.students);
  canvas.dataset.requests = String(drawn.requests);
  // The lanes in words, for a screen reader (the canvas is one picture to it).
  const said = (counts) => Object.entries(counts).map(([o, n]) => `${OUTCOMES[o]?.label || o} ${n}`).join(", ");
  document.getElementById("class-lanes").replaceChildren(
    ...drawn.lanes.map((lane) =>
      el("li", { dataset: { student: lane.key, requests: String(lane.requests) } }, `${lane.name}: 요청 ${lane.requests}개 (${said(lane.counts)})`),
    ),
  );
  // The vertical lines in words: a death, a restart, a knob's turn is a line in one picture to a screen reader.
  document.getElementById("class-marks").replaceChildren(
    ...drawn.marks.map((mark) =>
      el(
        "li",
        { dataset: { kind: mark.kind, at: mark.at.toFixed(3), x: mark.x.toFixed(1) } },
        `${new Date(mark.at * 1000).toLocaleTimeString("ko-KR")} ${mark.words}`,
      ),
    ),
  );
  document.getElementById("class-summary").textContent =
    `학생 ${lesson.students.size}명 · 요청 ${lesson.entries.size}개` + (view.live ? "" : " · 멈춤 (지금 것은 계속 받는 중)");
  const start = lesson.start();
  const scroll = document.getElementById("class-scroll");
  if (view.live) scroll.value = scroll.max;
  else scroll.value = String(Math.round(((t1 - start) / Math.max(1, lesson.now() - start)) * Number(scroll.max)));
  drawTallies();
}

function reasons(t) {
  const words = Object.entries(t.reasons).map(([r, n]) => `${REASONS[r] || r} ${n}`);
  return words.length ? `${t.refused} (${words.join(", ")})` : String(t.refused);
}

function waits(t) {
  return t.p50Ms === null ? "–" : `${fmtMs(t.p50Ms)} · ${fmtMs(t.p95Ms)}`;
}

function drawTallies() {
  const body = document.querySelector("#class-tallies tbody");
  const byPath = new Map(PATHS.map((p) => [p.name, []]));
  for (const e of lesson.entries.values()) byPath.get(e.path)?.push(e);
  body.replaceChildren(
    ...PATHS.map((path) => {
      const all = byPath.get(path.name);
      const burst = tally(lastBurst(all));
      const whole = tally(all);
      const r = whole.returns;
      const cells = [
        burst.requests, burst.served, burst.refused, waits(burst), fmtMs(burst.longestMs),
        whole.requests, whole.served, reasons(whole), whole.cut, waits(whole), fmtMs(whole.longestMs),
        r.presented ? `${r.seated} / ${r.presented}` : "–",
      ]; // prettier-ignore
      return el(
        "tr",
        { dataset: { path: path.name } },
        el("th", { scope: "row" }, path.label),
        ...cells.map((value, i) => el("td", { class: i === 7 ? "reasons" : all.length ? "" : "none" }, String(value))),
      );
    }),
  );
  body.dataset.served = String([...lesson.entries.values()].filter(isServed).length);
}

function legend() {
  const list = document.getElementById("class-legend");
  for (const [outcome, { label, color }] of Object.entries(OUTCOMES)) {
    const swatch = el("span", { class: "swatch", "aria-hidden": "true" });
    swatch.style.background = color;
    list.append(el("li", { dataset: { outcome } }, swatch, label));
  }
  const ticket = el("span", { class: "swatch", "aria-hidden": "true" });
  ticket.style.background = "#56b4e9";
  ticket.style.height = "8px";
  list.append(el("li", {}, ticket, "④ 번호표를 받고 결과까지"));
  for (const kind of ["death", "start", "knob", "lost"]) {
    const rule = el("span", { class: "rule", "aria-hidden": "true" });
    rule.style.background = MARKS[kind].color;
    list.append(el("li", { dataset: { mark: kind } }, rule, MARKS[kind].label));
  }
}

/** Paused: the window stays where it is (or moves to `end`); else it follows the live edge. */
function pause(paused, end = null) {
  if (paused) view.end = end ?? (view.live ? lesson.now() : view.end);
  view.live = !paused;
  const button = document.getElementById("class-pause");
  button.setAttribute("aria-pressed", String(paused));
  button.textContent = paused ? "다시 흐르게" : "멈춤";
  if (socket && socket.readyState === WebSocket.OPEN) setLink(paused ? "paused" : "live", paused ? "멈춤" : "실시간");
  draw();
}

function moveTo(end) {
  pause(true, Math.max(lesson.start() + 1, Math.min(end, lesson.now()))); // never past now, never before the lesson
}

async function download(format) {
  const response = await fetch(`/api/class/requests?format=${format}`, {
    headers: { Authorization: `Bearer ${token}` },
    cache: "no-store",
  });
  if (!response.ok) {
    setLink("down", `내려받지 못했습니다 (HTTP ${response.status})`);
    return;
  }
  const stamp = new Date().toISOString().slice(0, 16).replace(/[-:T]/g, "");
  const link = el("a", { href: URL.createObjectURL(await response.blob()), download: `class-${stamp}.${format}` });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
}

document.getElementById("class-pause").addEventListener("click", () => pause(view.live));
document.getElementById("class-now").addEventListener("click", () => pause(false));
document.getElementById("class-earlier").addEventListener("click", () => moveTo(windowNow()[1] - view.span / 2));
document.getElementById("class-later").addEventListener("click", () => moveTo(windowNow()[1] + view.span / 2));
document.getElementById("class-span").addEventListener("change", (event) => {
  view.span = Number(event.target.value);
  draw();
});
document.getElementById("class-scroll").addEventListener("input", (event) => {
  const start = lesson.start();
  const share = Number(event.target.value) / Number(event.target.max);
  if (share >= 1) pause(false);
  else moveTo(start + share * (lesson.now() - start));
});
canvas.addEventListener(
  "wheel",
  (event) => {
    event.preventDefault();
    moveTo(windowNow()[1] + (Math.sign(event.deltaY || event.deltaX) * view.span) / 6);
  },
  { passive: false },
);
document.getElementById("class-json").addEventListener("click", () => download("json"));
document.getElementById("class-csv").addEventListener("click", () => download("csv"));
window.addEventListener("resize", draw);

legend();
draw();
connect();
setInterval(() => {
  if (view.live) draw();
}, DRAW_EVERY_MS);
