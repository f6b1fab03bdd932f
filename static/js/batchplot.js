// One panel of ③'s "where does batching pay?" figure: seconds per model call against batch size n,
// the measured points, their fit a + b·n, the dashed "n reviews one at a time" line, and any extra points.
import { svgEl } from "./dom.js";
import { drawYTicks, niceTicks } from "./ticks.js";

const W = 320, H = 230, LEFT = 46, RIGHT = 10, TOP = 26, BOTTOM = 40;

/** Seconds as people read them on this figure: three significant digits, Korean unit. */
export function seconds(value) {
  return `${Number(value.toPrecision(3))}초`;
}

/**
 * `panel`: {model, title, color, points: [{n, seconds}], fit: {a, b}, student: [{n, seconds, count}]}, every
 * value already at the box's speed. Returns the SVG; its data-* attributes carry what it draws, for tests.
 */
export function drawPanel(panel) {
  const measuredMax = Math.max(...panel.points.map((p) => p.n));
  const xMax = Math.max(measuredMax, ...panel.student.map((p) => p.n));
  const alone = panel.points.find((p) => p.n === 1)?.seconds ?? panel.fit.a + panel.fit.b;
  const yData = Math.max(alone * measuredMax, ...panel.points.map((p) => p.seconds), ...panel.student.map((p) => p.seconds));
  const { ticks, top, step } = niceTicks(yData);
  const x = (n) => LEFT + ((n - 1) / Math.max(1, xMax - 1)) * (W - LEFT - RIGHT);
  const y = (s) => TOP + (1 - s / top) * (H - TOP - BOTTOM);

  const svg = svgEl("svg", {
    viewBox: `0 0 ${W} ${H}`, role: "img", class: "curve-svg", "aria-label": panel.title,
    "data-model": panel.model, "data-a-s": panel.fit.a, "data-b-s": panel.fit.b, "data-y-ticks": ticks.join(" "),
  });
  svg.append(svgEl("text", { x: LEFT, y: 14, "font-size": 12, "font-weight": "bold" }, panel.title));
  drawYTicks(svg, { ticks, step }, y, LEFT, W - RIGHT);
  svg.append(svgEl("line", { x1: LEFT, y1: TOP, x2: LEFT, y2: y(0), stroke: "#999" }));
  const xStep = xMax > 10 ? 2 : 1;
  for (let n = 1; n <= xMax; n += xStep) {
    svg.append(svgEl("text", { x: x(n), y: H - BOTTOM + 14, "text-anchor": "middle", "font-size": 10 }, n));
  }
  svg.append(svgEl("text", { x: (LEFT + W) / 2, y: H - 6, "text-anchor": "middle", "font-size": 11 }, "묶음 크기 n (리뷰 수)"));
  svg.append(svgEl("text", { x: 2, y: TOP - 6, "font-size": 10 }, "초"));

  // What n reviews one at a time would cost: where the fit runs below it, batching pays.
  const dashed = svgEl("line", { x1: x(1), y1: y(alone), x2: x(measuredMax), y2: y(alone * measuredMax), stroke: "#888", "stroke-dasharray": "4 3" });
  dashed.append(svgEl("title", {}, `하나씩 n번 보냈을 때: n × ${seconds(alone)}`));
  svg.append(dashed);
  const fitAt = (n) => panel.fit.a + panel.fit.b * n;
  const fit = svgEl("line", { x1: x(1), y1: y(fitAt(1)), x2: x(measuredMax), y2: y(fitAt(measuredMax)), stroke: panel.color, "stroke-width": 2, class: "fit" });
  fit.append(svgEl("title", {}, `맞춘 직선: ${seconds(panel.fit.a)} + ${seconds(panel.fit.b)} × n`));
  svg.append(fit);
  for (const p of panel.points) {
    const dot = svgEl("circle", { cx: x(p.n), cy: y(p.seconds), r: 3, fill: panel.color, class: "measured", "data-n": p.n, "data-seconds": p.seconds });
    dot.append(svgEl("title", {}, `n=${p.n}: 한 번에 ${seconds(p.seconds)}, 리뷰당 ${seconds(p.seconds / p.n)}`));
    svg.append(dot);
  }
  for (const p of panel.student) {
    const mark = svgEl("rect", {
      x: x(p.n) - 4, y: y(p.seconds) - 4, width: 8, height: 8, fill: "none", stroke: "#c53030", "stroke-width": 2,
      class: "student", "data-n": p.n, "data-seconds": p.seconds, "data-count": p.count,
    });
    mark.append(svgEl("title", {}, `내 ③ 묶음 ${p.count}개: n=${p.n}, 추론 ${seconds(p.seconds)}`));
    svg.append(mark);
  }
  return svg;
}
