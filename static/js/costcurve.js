// ⑤'s note: "what does each way cost under a crowd?" Served per second, served work (each answer weighed by what
// its review costs alone, kit/work.py), p95 of the served and the served reviews' length against the offered, for
// the paths the benchmark compares (static/adaptive-curve.json, `python -m bench.adaptive`: medians of its
// repeats), Infinity and LitServe beside them where a peer report was drawn in (`--peers`, counted the same way),
// and what bursts of 12 and 50 got. Ratios, so no number here depends on the host's speed. A curve
// written before work was measured has no work or lengths: those panels and columns are left out.
import { el, svgEl } from "./dom.js";
import { pathNamed } from "./paths.js";
import { drawYTicks, niceTicks } from "./ticks.js";

const W = 320, H = 230, LEFT = 40, RIGHT = 12, TOP = 26, BOTTOM = 40;
const COLORS = ["#0072b2", "#d55e00", "#009e73", "#cc79a7", "#8a6212", "#6a3d9a"]; // Okabe-Ito, then two darker for 3:1 on white
const MARKS = ["circle", "square", "diamond", "triangle", "down", "ring"]; // a shape each: colour is never the only cue

function figure() {
  return document.getElementById("adaptive-curve");
}

/** A lab path's label from the registry; a peer's point carries its own (the server's name and version). */
const label = (point) => point.label ?? pathNamed(point.path)?.label ?? point.path;
const times = (value, digits = 2) => `${Number(value.toFixed(digits))}배`;
const pct = (share) => `${Math.round(share * 100)}%`;
const known = (value) => value !== null && value !== undefined;
const chars = (value) => (known(value) ? `${Math.round(value)}자` : "–");
/** The served reviews' mean length ÷ the offered's: 1 when a path answers the mix it was sent. */
const lengthRatio = (p) => (known(p.served_mean_chars) && p.offered_mean_chars ? p.served_mean_chars / p.offered_mean_chars : null);

function mark(shape, x, y, color) {
  if (shape === "circle") return svgEl("circle", { cx: x, cy: y, r: 3.5, fill: color });
  if (shape === "square") return svgEl("rect", { x: x - 3.5, y: y - 3.5, width: 7, height: 7, fill: color });
  if (shape === "ring") return svgEl("circle", { cx: x, cy: y, r: 3.5, fill: "#fff", stroke: color, "stroke-width": 2 });
  const points = {
    diamond: [[x, y - 4.5], [x + 4.5, y], [x, y + 4.5], [x - 4.5, y]],
    triangle: [[x, y - 4.5], [x + 4.5, y + 4], [x - 4.5, y + 4]],
    down: [[x, y + 4.5], [x + 4.5, y - 4], [x - 4.5, y - 4]],
  }[shape];
  return svgEl("polygon", { points: points.map((p) => p.join(",")).join(" "), fill: color });
}

/** One panel: `value(point)` against the offered multiple (log scale), a line per path, and a dashed reference. */
function panel({ key, title, unit, series, multiples, value, reference }) {
  const top = niceTicks(Math.max(reference.at, ...series.flatMap((s) => s.points.map(value).filter(known))));
  const lo = Math.log2(Math.min(...multiples)), hi = Math.log2(Math.max(...multiples));
  const x = (m) => LEFT + ((Math.log2(m) - lo) / Math.max(1e-9, hi - lo)) * (W - LEFT - RIGHT);
  const y = (v) => TOP + (1 - v / top.top) * (H - TOP - BOTTOM);
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", class: "curve-svg", "aria-label": title, "data-panel": key });
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
    const drawn = s.points.filter((p) => known(value(p)));
    const line = svgEl("polyline", {
      points: drawn.map((p) => `${x(p.multiple)},${y(value(p))}`).join(" "),
      fill: "none", stroke: COLORS[i % COLORS.length], "stroke-width": 2, class: "series", "data-path": s.path,
    });
    svg.append(line);
    for (const p of drawn) {
      const dot = mark(MARKS[i % MARKS.length], x(p.multiple), y(value(p)), COLORS[i % COLORS.length]);
      dot.setAttribute("class", "point");
      dot.dataset.path = s.path;
      dot.dataset.multiple = String(p.multiple);
      dot.dataset.value = String(value(p));
      dot.append(svgEl("title", {}, `${s.label}, ${p.multiple}×: ${times(value(p))}`));
      svg.append(dot);
    }
  });
  return svg;
}

function bySeries(streams) {
  const series = [];
  for (const point of streams) {
    let s = series.find((t) => t.path === point.path);
    if (!s) series.push((s = { path: point.path, label: label(point), points: [] }));
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
    const served = known(p.served_work)
      ? `건수로 ${times(p.served_vs_capacity)}, 일로 ${times(p.served_work)}를 처리했고(답한 리뷰 평균 ${chars(p.served_mean_chars)}, 보낸 리뷰 평균 ${chars(p.offered_mean_chars)}),`
      : `${times(p.served_vs_capacity)}를 처리했고`;
    return `${s.label}는 하나씩일 때의 ${served} 받은 요청의 95%가 리뷰 한 건 시간의 ${times(p.p95_reviews, 1)} 안에 답을 받았습니다(${cost})`;
  });
  return `${multiple}배가 몰리면: ${parts.filter(Boolean).join("; ")}.`;
}

/** Which of the newer measurements a set of points carries (a curve from before them has none). */
function carries(points) {
  return {
    work: points.some((p) => known(p.served_work)),
    length: points.some((p) => lengthRatio(p) !== null),
    late: points.some((p) => known(p.late)),
  };
}

function mixCaption(mix) {
  if (!mix.long_share) return "그림의 숫자 (반복 측정의 중간값)";
  return `긴 리뷰(${(mix.long_chars ?? 0).toLocaleString("ko-KR")}자)를 ${pct(mix.long_share)} 섞었을 때 (반복 측정의 중간값, 리뷰 한 건 평균 ${mix.one_review_s}초)`;
}

function table(mix, peers = []) {
  const has = carries(mix.streams);
  const heads = ["경로", "몰린 양", "건수 ÷ 하나씩",
    has.work ? "일 ÷ 하나씩" : null, has.length ? "평균 길이: 답함 / 보냄" : null,
    "95%가 답을 받은 시간 ÷ 리뷰 한 건", "바로 거절", "30초에 포기", has.late ? "약속보다 늦은 답 (모든 회)" : null].filter(Boolean);
  const head = el("tr", {}, ...heads.map((h) => el("th", { scope: "col" }, h)));
  const rows = [...mix.streams, ...peers].map((p) => el("tr", {},
    el("th", { scope: "row" }, label(p)), el("td", {}, `${p.multiple}×`), el("td", {}, times(p.served_vs_capacity)),
    has.work ? el("td", {}, known(p.served_work) ? times(p.served_work) : "–") : null,
    has.length ? el("td", {}, `${chars(p.served_mean_chars)} / ${chars(p.offered_mean_chars)}`) : null,
    el("td", {}, p.p95_reviews === null ? "–" : times(p.p95_reviews, 1)), el("td", {}, pct(p.refused_share)), el("td", {}, pct(p.gave_up_share)),
    has.late ? el("td", {}, known(p.late) ? `${p.late}건` : "–") : null));
  return el("table", { class: "curve-table", dataset: { longShare: String(mix.long_share ?? 0) } },
    el("caption", {}, mixCaption(mix)), el("thead", {}, head), el("tbody", {}, ...rows));
}

function bursts(data) {
  const sizes = [...new Set(data.bursts.map((b) => b.burst))];
  const work = (b) => (known(b.served_work_reviews) ? `, 일로 리뷰 ${b.served_work_reviews}건 몫` : "");
  return sizes.map((size) => `한꺼번에 ${size}명: ` + data.bursts.filter((b) => b.burst === size)
    .map((b) => `${label(b)} ${b.served}명 답${work(b)} (첫 답 ${b.first_answer_s ?? "–"}초, 마지막 ${b.slowest_served_s ?? "–"}초)`).join(", ")).join(". ");
}

/** Where Infinity's and LitServe's points come from, in Korean; "" when the figure has none. */
function peersMeasured(peers) {
  if (!peers?.streams?.length) return "";
  return ` Infinity·LitServe는 ${peers.date} ${peers.time_utc} UTC에 같은 서버·같은 코어에서 따로 잰 값입니다` +
    `(보내는 시간 안에 받은 답을 같은 방식으로 세고, 그 측정에서 잰 리뷰 한 건 ${peers.one_review_s}초에 대한 비율).`;
}

function render(data) {
  const peers = data.peers?.streams ?? [];
  const series = bySeries([...data.streams, ...peers]);
  const multiples = [...new Set([...data.streams, ...peers].map((p) => p.multiple))].sort((a, b) => a - b);
  const timeout = data.client_timeout_s / data.one_review_s;
  const has = carries(data.streams);
  const box = figure();
  const panels = [
    panel({ key: "served", title: "처리한 건수 (초당, 하나씩일 때의 몇 배)", unit: "배", series, multiples, value: (p) => p.served_vs_capacity,
      reference: { at: 1, title: "하나씩 보낼 때 처리할 수 있는 건수" } }),
    has.work ? panel({ key: "work", title: "처리한 일 (리뷰마다 혼자 걸리는 시간으로 잼)", unit: "배", series, multiples, value: (p) => p.served_work ?? null,
      reference: { at: 1, title: "레인이 쉬지 않고 답할 리뷰만 처리한 만큼" } }) : null,
    panel({ key: "p95", title: "95%가 답을 받은 시간 (리뷰 한 건 시간의 몇 배)", unit: "배", series, multiples, value: (p) => p.p95_reviews,
      reference: { at: timeout, title: `손님이 포기하는 30초 = 리뷰 ${timeout.toFixed(0)}건 시간` } }),
    has.length ? panel({ key: "length", title: "답한 리뷰의 평균 길이 ÷ 보낸 리뷰의 평균 길이", unit: "배", series, multiples, value: lengthRatio,
      reference: { at: 1, title: "보낸 리뷰와 같은 길이의 리뷰에 답함" } }) : null,
  ];
  box.querySelector(".curve-plots").replaceChildren(...panels.filter(Boolean));
  const legend = box.querySelector(".curve-legend");
  legend.replaceChildren(...series.map((s, i) => {
    const swatch = svgEl("svg", { viewBox: "0 0 22 10", width: 22, height: 10, "aria-hidden": "true" });
    swatch.append(svgEl("line", { x1: 0, y1: 5, x2: 22, y2: 5, stroke: COLORS[i % COLORS.length], "stroke-width": 2 }));
    swatch.append(mark(MARKS[i % MARKS.length], 11, 5, COLORS[i % COLORS.length]));
    return el("li", { dataset: { path: s.path } }, swatch, ` ${s.label}`);
  }));
  box.querySelector(".curve-answer").textContent = answer(series, multiples[multiples.length - 1]);
  box.querySelector(".curve-bursts").textContent = data.bursts.length ? `${bursts(data)}.` : "";
  box.querySelector(".curve-numbers").replaceChildren(table(data, peers), ...(data.long_mixes ?? []).map((m) => table(m)));
  const oneReview = data.cost_fit_samples
    ? `리뷰 한 건 ${data.one_review_s}초(보낸 리뷰들을 하나씩 처리할 때의 평균: 하나씩 잰 ${data.cost_fit_samples}건으로 토큰 수에 맞춘 식으로 계산)`
    : `리뷰 한 건 ${data.one_review_s}초(하나씩 보낸 중간값)`;
  const mixed = data.long_share ? ` 긴 리뷰(${(data.long_chars ?? 0).toLocaleString("ko-KR")}자)를 ${pct(data.long_share)} 섞어 보냈습니다.` : "";
  box.querySelector(".curve-measured small").textContent =
    `측정: ${data.date} ${data.time_utc} UTC, ${data.host_ko}, 코어 ${data.core}번 하나에 고정, 추론 스레드 1개. ` +
    `몰린 양마다 ${data.duration_s}초 동안 포아송 간격으로 보내고 ${data.client_timeout_s}초 뒤 포기하는 손님, ${data.runs}번 잰 중간값.${mixed} ` +
    `${oneReview}.${peersMeasured(data.peers)} 상자가 아니라 이 서버의 코어에서 잰 값이라 비율로만 보여 줍니다.`;
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
