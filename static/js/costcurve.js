// ⑤'s note: "what does each way cost under a crowd?" Served per second and p95 of the served against the
// offered load, for the paths the benchmark compares (static/adaptive-curve.json, `python -m bench.adaptive`:
// medians of its repeats), and what bursts of 12 and 50 got. Ratios, so no number here depends on the host's speed.
import { el, svgEl } from "./dom.js";
import { pathNamed } from "./paths.js";
import { drawYTicks, niceTicks } from "./ticks.js";

const W = 320, H = 230, LEFT = 40, RIGHT = 12, TOP = 26, BOTTOM = 40;
const COLORS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7"]; // Okabe-Ito, in the order the data lists paths
const MARKS = ["circle", "square", "diamond", "triangle"]; // a shape each, so colour is never the only cue

function figure() {
  return document.getElementById("adaptive-curve");
}

const label = (name) => pathNamed(name)?.label ?? name;
const times = (value, digits = 2) => `${Number(value.toFixed(digits))}배`;
const pct = (share) => `${Math.round(share * 100)}%`;

function mark(shape, x, y, color) {
  if (shape === "circle") return svgEl("circle", { cx: x, cy: y, r: 3.5, fill: color });
  if (shape === "square") return svgEl("rect", { x: x - 3.5, y: y - 3.5, width: 7, height: 7, fill: color });
  const points = shape === "diamond"
    ? [[x, y - 4.5], [x + 4.5, y], [x, y + 4.5], [x - 4.5, y]]
    : [[x, y - 4.5], [x + 4.5, y + 4], [x - 4.5, y + 4]];
  return svgEl("polygon", { points: points.map((p) => p.join(",")).join(" "), fill: color });
}

/** One panel: `value(point)` against the offered multiple (log scale), a line per path, and a dashed reference. */
function panel({ title, unit, series, multiples, value, reference }) {
  const top = niceTicks(Math.max(reference.at, ...series.flatMap((s) => s.points.map(value).filter((v) => v !== null))));
  const lo = Math.log2(Math.min(...multiples)), hi = Math.log2(Math.max(...multiples));
  const x = (m) => LEFT + ((Math.log2(m) - lo) / Math.max(1e-9, hi - lo)) * (W - LEFT - RIGHT);
  const y = (v) => TOP + (1 - v / top.top) * (H - TOP - BOTTOM);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "curve-svg", "aria-label": title });
  svg.append(svgEl("text", { x: LEFT, y: 14, "font-size": 12, "font-weight": "bold" }, title));
  drawYTicks(svg, top, y, LEFT, W - RIGHT);
  for (const m of multiples) {
    svg.append(svgEl("text", { x: x(m), y: H - BOTTOM + 14, "text-anchor": "middle", "font-size": 10 }, `${m}×`));
  }
  svg.append(svgEl("text", { x: (LEFT + W) / 2, y: H - 6, "text-anchor": "middle", "font-size": 11 }, "몰린 양 (하나씩 처리할 수 있는 양의 몇 배)"));
  svg.append(svgEl("text", { x: 2, y: TOP - 6, "font-size": 10 }, unit));
  const ref = svgEl("line", { x1: LEFT, y1: y(reference.at), x2: W - RIGHT, y2: y(reference.at), stroke: "#888", "stroke-dasharray": "4 3" });
  ref.append(svgEl("title", {}, reference.title));
  svg.append(ref);
  series.forEach((s, i) => {
    const known = s.points.filter((p) => value(p) !== null);
    const line = svgEl("polyline", {
      points: known.map((p) => `${x(p.multiple)},${y(value(p))}`).join(" "),
      fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 2, class: "series", "data-path": s.path,
    });
    svg.append(line);
    for (const p of known) {
      const dot = mark(MARKS[i % MARKS.length], x(p.multiple), y(value(p)), COLORS[i % COLORS.length]);
      dot.setAttribute("class", "point");
      dot.dataset.path = s.path;
      dot.dataset.multiple = String(p.multiple);
      dot.dataset.value = String(value(p));
      dot.append(svgEl("title", {}, `${label(s.path)}, ${p.multiple}×: ${times(value(p))}`));
      svg.append(dot);
    }
  });
  return svg;
}

function bySeries(streams) {
  const series = [];
  for (const point of streams) {
    let s = series.find((t) => t.path === point.path);
    if (!s) series.push((s = { path: point.path, points: [] }));
    s.points.push(point);
  }
  return series;
}

/** The figure's answer, from the data: at the heaviest load, what each path delivered and what it gave up. */
function answer(series, multiple) {
  const parts = series.map((s) => {
    const p = s.points.find((q) => q.multiple === multiple);
    if (!p) return null;
    const cost = [p.refused_share ? `${pct(p.refused_share)} 바로 거절` : null, p.gave_up_share ? `${pct(p.gave_up_share)} 30초를 기다리다 포기` : null]
      .filter(Boolean).join(", ") || "거절도 포기도 없음";
    return `${label(s.path)}는 하나씩일 때의 ${times(p.served_vs_capacity)}를 처리했고 받은 요청의 95%가 리뷰 한 건 시간의 ${times(p.p95_reviews, 1)} 안에 답을 받았습니다(${cost})`;
  });
  return `${multiple}배가 몰리면: ${parts.filter(Boolean).join("; ")}.`;
}

function table(data) {
  const head = el("tr", {}, ...["경로", "몰린 양", "처리량 ÷ 하나씩", "95%가 답을 받은 시간 ÷ 리뷰 한 건", "바로 거절", "30초에 포기"].map((h) => el("th", { scope: "col" }, h)));
  const rows = data.streams.map((p) => el("tr", {},
    el("th", { scope: "row" }, label(p.path)), el("td", {}, `${p.multiple}×`), el("td", {}, times(p.served_vs_capacity)),
    el("td", {}, p.p95_reviews === null ? "–" : times(p.p95_reviews, 1)), el("td", {}, pct(p.refused_share)), el("td", {}, pct(p.gave_up_share))));
  return el("table", { class: "curve-table" }, el("caption", {}, "그림의 숫자 (반복 측정의 중간값)"), el("thead", {}, head), el("tbody", {}, ...rows));
}

function bursts(data) {
  const sizes = [...new Set(data.bursts.map((b) => b.burst))];
  return sizes.map((size) => `한꺼번에 ${size}명: ` + data.bursts.filter((b) => b.burst === size)
    .map((b) => `${label(b.path)} ${b.served}명 답 (첫 답 ${b.first_answer_s ?? "–"}초, 마지막 ${b.slowest_served_s ?? "–"}초)`).join(", ")).join(". ");
}

function render(data) {
  const series = bySeries(data.streams);
  const multiples = [...new Set(data.streams.map((p) => p.multiple))].sort((a, b) => a - b);
  const timeout = data.client_timeout_s / data.one_review_s;
  const box = figure();
  box.querySelector(".curve-plots").replaceChildren(
    panel({ title: "처리한 양 (초당, 하나씩일 때의 몇 배)", unit: "배", series, multiples, value: (p) => p.served_vs_capacity,
      reference: { at: 1, title: "하나씩 보낼 때 처리할 수 있는 양" } }),
    panel({ title: "95%가 답을 받은 시간 (리뷰 한 건 시간의 몇 배)", unit: "배", series, multiples, value: (p) => p.p95_reviews,
      reference: { at: timeout, title: `손님이 포기하는 30초 = 리뷰 ${timeout.toFixed(0)}건 시간` } }),
  );
  const legend = box.querySelector(".curve-legend");
  legend.replaceChildren(...series.map((s, i) => {
    const swatch = svgEl("svg", { viewBox: "0 0 22 10", width: 22, height: 10, "aria-hidden": "true" });
    swatch.append(svgEl("line", { x1: 0, y1: 5, x2: 22, y2: 5, stroke: COLORS[i % COLORS.length], "stroke-width": 2 }));
    swatch.append(mark(MARKS[i % MARKS.length], 11, 5, COLORS[i % COLORS.length]));
    return el("li", { dataset: { path: s.path } }, swatch, ` ${label(s.path)}`);
  }));
  box.querySelector(".curve-answer").textContent = answer(series, multiples[multiples.length - 1]);
  box.querySelector(".curve-bursts").textContent = data.bursts.length ? `${bursts(data)}.` : "";
  box.querySelector(".curve-numbers").replaceChildren(table(data));
  box.querySelector(".curve-measured small").textContent =
    `측정: ${data.date} ${data.time_utc} UTC, ${data.host_ko}, 코어 ${data.core}번 하나에 고정, 추론 스레드 1개. ` +
    `몰린 양마다 ${data.duration_s}초 동안 포아송 간격으로 보내고 ${data.client_timeout_s}초 뒤 포기하는 손님, ${data.runs}번 잰 중간값. ` +
    `리뷰 한 건 ${data.one_review_s}초(하나씩 보낸 중간값). 상자가 아니라 이 서버의 코어에서 잰 값이라 비율로만 보여 줍니다.`;
  box.dataset.state = "drawn";
}

/** Loads the committed medians and draws them; on failure says so in Korean. */
export async function showCostCurve() {
  if (!figure()) return;
  try {
    const response = await fetch("/static/adaptive-curve.json");
    if (!response.ok) throw new Error(String(response.status));
    render(await response.json());
  } catch {
    figure().querySelector(".curve-measured small").textContent = "측정값을 불러오지 못했습니다.";
    figure().dataset.state = "failed";
  }
}
