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

/** Per `gives_up` (app/api/page.py): what a path trades away, in Korean, with this burst's numbers. */
const GAVE_UP = {
  fast_answers(burst, s) {
    const fastest = Math.min(...burst.rows.filter(isServed).map((r) => r.totalMs));
    let line =
      `포기한 것: 빠른 답. 아무도 거절하지 않았지만 모두가 CPU를 나눠 써 p95 ${fmtMs(s.p95Ms)}` +
      (Number.isFinite(fastest) ? ` (가장 빠른 답 ${fmtMs(fastest)})` : "");
    const box = burst.box;
    if (box && box.peakMemoryBytes != null && box.memoryBeforeBytes != null) {
      line += `, 메모리 +${((box.peakMemoryBytes - box.memoryBeforeBytes) / 2 ** 20).toFixed(0)} MiB`;
      if (box.peakMemoryPct != null) line += ` (상한의 ${box.peakMemoryPct.toFixed(0)}%까지)`;
    }
    return line;
  },
  requests(burst, s, refused) {
    if (!refused) return `포기한 것: 이번엔 없음. 자리가 남아 ${s.served}개 모두 받음 (더 몰리면 거절)`;
    // A 429 comes back at once; a 503 only after the request waited its limit on the server.
    // "바로" only when every 429 came back within a second (a refusal that waited is not immediate).
    const quick = burst.rows.filter((r) => r.status === 429);
    const slowest = Math.max(0, ...quick.map((r) => r.totalMs || 0));
    const late = burst.rows.filter((r) => r.status === 503);
    const longest = Math.max(0, ...late.map((r) => r.waitMs || 0));
    const how = [
      quick.length && slowest < QUICK_REFUSAL_MS ? `${quick.length}개는 바로 거절(429)` : "",
      quick.length && slowest >= QUICK_REFUSAL_MS ? `${quick.length}개는 거절(429, 가장 늦은 거절 ${fmtMs(slowest)})` : "",
      late.length ? `${late.length}개는 서버에서 최대 ${fmtMs(longest)} 기다린 뒤 거절(503)` : "",
    ].filter(Boolean);
    return `포기한 것: ${refused}/${s.size}개 요청. ${how.join(", ") || "거절"}, 받은 ${s.served}개만 제때 처리`;
  },
  own_pace(burst, s) {
    return (
      `포기한 것: 각자의 빠른 답. 묶음(평균 ${s.meanBatch == null ? "–" : s.meanBatch.toFixed(1)}개)이 모여 출발하고, ` +
      `묶음 안에서는 짧은 리뷰부터 끝나는 대로 답하므로 긴 리뷰는 묶음 끝까지 기다림, p50 ${fmtMs(s.p50Ms)}`
    );
  },
  fairness(burst, s, refused) {
    if (!refused) return `포기한 것: 이번엔 없음. 줄이 목표 안에 빠져 ${s.served}개 모두 받음 (더 몰리면 거절)`;
    const late = burst.rows.filter((r) => r.status === 429);
    const slowest = Math.max(0, ...late.map((r) => r.totalMs || 0));
    return (
      `포기한 것: 공정함. ${refused}/${s.size}개 거절(가장 늦은 거절 ${fmtMs(slowest)}), 줄이 서 있으면 새로 온 요청부터 ` +
      `처리해 먼저 온 요청은 약속한 시간 안에서 뒤로 밀리고 긴 리뷰가 먼저 거절됨, 받은 ${s.served}개 p95 ${fmtMs(s.p95Ms)}`
    );
  },
  one_answer(burst, s) {
    const late = s.etaLateS == null ? "" : `, 약속보다 평균 ${s.etaLateS >= 0 ? "+" : ""}${s.etaLateS.toFixed(1)}초`;
    return `포기한 것: 한 번에 받는 답. 번호표를 받고 결과를 따로 기다려야 함, 결과까지 p95 ${fmtMs(s.p95Ms)}${late}`;
  },
};

/** One line, in Korean, on what this path gave up in this burst; numbers from the burst itself. */
function gaveUp(burst) {
  const s = burst.summary;
  const refused = s.size - s.served;
  const givesUp = pathNamed(burst.path).gives_up;
  let line = GAVE_UP[givesUp](burst, s, refused);
  if (s.cacheHits) line += ` · 캐시가 ${s.cacheHits}개를 추론 없이 답함 (같은 리뷰일 때만)`;
  if (refused && givesUp !== "requests") line += ` · 실패/거절 ${refused}개`;
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
