// The comparison: every saved burst as a card that says what its path gave up, and all of them as
// strips on one shared time axis, so paths can be compared without firing again.
import { el, fmtMs, svgEl } from "./dom.js";
import { PATHS, pathNamed } from "./paths.js";
import { describeRecording } from "./recording.js";
import { summaryParts } from "./rows.js";
import { isServed } from "./summary.js";

const MODES = { distinct: "서로 다른 리뷰", repeat: "같은 리뷰 반복" };

/** `② limited · 서로 다른 리뷰 · 12개`: a burst's path, review mode and size. */
export function burstLabel(burst) {
  const again = burst.retry ? " · 거절되면 다시 오기" : "";
  return `${pathNamed(burst.path).label} · ${MODES[burst.mode] || burst.mode} · ${burst.rows.length}개${again}`;
}

/** The saved bursts in a stable order: by path, then distinct before repeat, then size. */
function savedInOrder(saved) {
  const pathOrder = PATHS.map((p) => p.name);
  const modeOrder = Object.keys(MODES);
  return saved.entries().sort(([, a], [, b]) => {
    return (
      pathOrder.indexOf(a.path) - pathOrder.indexOf(b.path) ||
      modeOrder.indexOf(a.mode) - modeOrder.indexOf(b.mode) ||
      a.rows.length - b.rows.length ||
      Number(Boolean(a.retry)) - Number(Boolean(b.retry))
    );
  });
}

const QUICK_REFUSAL_MS = 1000;

/**
 * This burst's numbers, by the names the registry's sentences use (app/paths/registry.py, `GivesUp`);
 * null where a number is unknown for this burst, which leaves out the sentence's `[…]` part that names it.
 */
function facts(burst, s, refused) {
  const fastest = Math.min(...burst.rows.filter(isServed).map((r) => r.totalMs));
  const box = burst.box;
  const memory = box && box.peakMemoryBytes != null && box.memoryBeforeBytes != null;
  // A 429 comes back at once; a 503 only after the request waited its limit on the server.
  // "바로" only when every 429 came back within a second (a refusal that waited is not immediate).
  const quick = burst.rows.filter((r) => r.status === 429);
  const slowest = Math.max(0, ...quick.map((r) => r.totalMs || 0));
  const late = burst.rows.filter((r) => r.status === 503);
  return {
    size: s.size,
    served: s.served,
    refused,
    p50: fmtMs(s.p50Ms),
    p95: fmtMs(s.p95Ms),
    fastest: Number.isFinite(fastest) ? fmtMs(fastest) : null,
    memory_mib: memory ? ((box.peakMemoryBytes - box.memoryBeforeBytes) / 2 ** 20).toFixed(0) : null,
    memory_pct: memory && box.peakMemoryPct != null ? box.peakMemoryPct.toFixed(0) : null,
    mean_batch: s.meanBatch == null ? "–" : s.meanBatch.toFixed(1),
    quick_429: quick.length && slowest < QUICK_REFUSAL_MS ? quick.length : null,
    slow_429: quick.length && slowest >= QUICK_REFUSAL_MS ? quick.length : null,
    slowest_429: fmtMs(slowest),
    late_503: late.length || null,
    longest_503: fmtMs(Math.max(0, ...late.map((r) => r.waitMs || 0))),
    unexplained: refused && !quick.length && !late.length ? "" : null, // refused, neither by 429 nor 503
    eta_late: s.etaLateS == null ? null : `${s.etaLateS >= 0 ? "+" : ""}${s.etaLateS.toFixed(1)}`,
  };
}

/** `said` with the numbers filled in: `{name}` from `known`, a `[…]` part left out when a name in it is null. */
function fill(said, known) {
  const names = (part) => [...part.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  return said
    .replace(/\[([^[\]]*)\]/g, (_, part) => (names(part).every((n) => known[n] != null) ? part : ""))
    .replace(/\{(\w+)\}/g, (_, n) => String(known[n] ?? "–"));
}

/** One line, in Korean, on what this path gave up in this burst: its sentence from the registry, this burst's numbers. */
function gaveUp(burst) {
  const s = burst.summary;
  const refused = s.size - s.served;
  const givesUp = pathNamed(burst.path).gives_up;
  const said = !refused && givesUp.none_refused ? givesUp.none_refused : givesUp.said;
  let line = fill(said, facts(burst, s, refused));
  if (s.cacheHits) line += ` · 캐시가 ${s.cacheHits}개를 추론 없이 답함 (같은 리뷰일 때만)`;
  if (refused && !givesUp.counts_refusals) line += ` · 실패/거절 ${refused}개`;
  return line;
}

/** One card per saved burst (clicking one calls `select(key)`), then the chart. */
export function renderCompare(saved, select) {
  const entries = savedInOrder(saved);
  const cards = entries.map(([key, burst]) => {
    const when = new Date(burst.firedAt).toLocaleTimeString("ko-KR");
    const card = el(
      "div",
      {
        class: "compare-card",
        dataset: { key, path: burst.path, mode: burst.mode, size: String(burst.rows.length), retry: String(!!burst.retry) },
      },
      el("h3", {}, burstLabel(burst), " ", el("small", {}, when)),
      ...summaryParts(burst.summary, burst.path).map(([k, v]) => el("span", { class: "kv" }, `${k} `, el("b", {}, v))),
      el("p", { class: "gave-up" }, gaveUp(burst)),
      burst.box ? el("p", { class: "box-record" }, `상자: ${describeRecording(burst.box)}`) : null,
    );
    // A card is a control: reachable with Tab, opened with Enter or Space as with a click.
    Object.assign(card, { tabIndex: 0 });
    card.setAttribute("role", "button");
    card.setAttribute("aria-label", `${burstLabel(burst)} ${when}: 이 발사 결과 보기`);
    card.addEventListener("click", () => select(key));
    card.addEventListener("keydown", (event) => {
      if (event.key !== "Enter" && event.key !== " ") return;
      event.preventDefault();
      select(key);
    });
    return card;
  });
  if (!cards.length) cards.push(el("div", { class: "compare-card empty" }, "아직 없음: 발사하면 여기에 쌓입니다."));
  document.getElementById("compare-cards").replaceChildren(...cards);
  drawCompareChart(saved);
}

/** Step between axis ticks: 1, 2 or 5 times a power of ten seconds, about six ticks in all. */
function tickStepMs(maxMs) {
  const raw = maxMs / 6;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw);
}

/**
 * Every saved burst as one strip on ONE time axis (0 = the burst fired): each request is a line from
 * when it was sent to when its answer was in hand; refused or failed ones end in a red ×, so a
 * 429 that came back in 80 ms is still visible. The width follows the card, so text keeps its size.
 */
export function drawCompareChart(saved) {
  const holder = document.getElementById("compare-chart");
  const entries = savedInOrder(saved);
  if (!entries.length) {
    holder.replaceChildren();
    return;
  }
  const width = Math.max(280, Math.floor(holder.clientWidth || 760));
  const left = 8;
  const right = 12;
  const span = width - left - right;
  const maxMs = Math.max(1, ...entries.flatMap(([, b]) => b.rows.map((r) => r.endMs || 0)));
  const step = tickStepMs(maxMs);
  const axisMs = Math.ceil(maxMs / step) * step;
  const x = (ms) => left + (ms / axisMs) * span;
  const svg = svgEl("svg");
  const add = (parent, tag, attrs, text) => parent.appendChild(svgEl(tag, attrs, text));
  let y = 4;
  const grid = add(svg, "g", { class: "grid" });
  for (const [key, burst] of entries) {
    const s = burst.summary;
    const strip = add(svg, "g", { class: "strip", "data-key": key });
    add(strip, "text", { x: left, y: y + 12, "font-size": 12, "font-weight": 600 }, burstLabel(burst));
    add(
      strip,
      "text",
      { x: width - right, y: y + 12, "font-size": 11.5, fill: "#4b5563", "text-anchor": "end" },
      `처리 ${s.served} · 거절/실패 ${s.size - s.served}`,
    );
    y += 17;
    const lineH = Math.max(2, Math.min(5, Math.floor(36 / burst.rows.length)));
    for (const row of burst.rows) {
      const served = isServed(row);
      const start = x(row.startMs || 0);
      const end = Math.max(start + 1.5, x(row.endMs || 0));
      const cy = y + lineH / 2;
      add(strip, "line", {
        x1: start, x2: end, y1: cy, y2: cy,
        stroke: served ? "#0072B2" : "#D55E00",
        "stroke-width": Math.max(1, lineH - 1),
        class: served ? "served" : "refused",
      });
      if (!served) {
        // A 429 is back within milliseconds: a block at its end keeps it visible on a seconds axis.
        add(strip, "rect", { x: end, y: y, width: 5, height: Math.max(2, lineH - 1), fill: "#D55E00", class: "refused-mark" });
      }
      y += lineH;
    }
    y += 10;
  }
  for (let ms = 0; ms <= axisMs + 1e-6; ms += step) {
    add(grid, "line", { x1: x(ms), x2: x(ms), y1: 0, y2: y, stroke: "#e5e7eb" });
    const label = `${(ms / 1000).toFixed(step < 1000 ? 1 : 0)}초`;
    add(svg, "text", { x: x(ms), y: y + 12, "font-size": 11, fill: "#4b5563", "text-anchor": ms ? "middle" : "start" }, label);
  }
  y += 16;
  svg.setAttribute("viewBox", `0 0 ${width} ${y}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(y));
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", "저장된 발사들을 한 시간축에 그린 그림");
  svg.dataset.axisMs = String(axisMs);
  const note = el(
    "p",
    { class: "hint" },
    "한 줄 = 요청 하나 (보낸 때 → 답을 받은 때, 모든 발사가 같은 시간축). ",
    el("span", { class: "key-served" }, "파랑"),
    " = 처리됨, ",
    el("span", { class: "key-refused" }, "빨강(끝에 네모)"),
    " = 거절·실패.",
  );
  holder.replaceChildren(svg, note);
}
