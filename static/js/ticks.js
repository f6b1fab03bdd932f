// Round axis ticks, computed from the data: 0, 0.5, 1, 1.5 … or 0, 2, 4 … (steps of 1, 2 or 5 × 10^k),
// and the figures' one way to draw them.
import { svgEl } from "./dom.js";

/** The round step that covers 0..max in at most `most` steps. */
export function niceStep(max, most = 5) {
  if (!(max > 0)) return 1;
  const raw = max / most;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw - 1e-12);
  return step;
}

/** Ticks from 0 to the first round value at or above `max`: `{ticks, top, step}`. */
export function niceTicks(max, most = 5) {
  const step = niceStep(max, most);
  const count = Math.max(1, Math.ceil(max / step - 1e-9));
  const ticks = Array.from({ length: count + 1 }, (_, i) => roundTo(i * step, step));
  return { ticks, top: ticks[ticks.length - 1], step };
}

/** Decimals a tick of this step needs (0.5 → 1, 0.02 → 2, 2 → 0). */
export function stepDecimals(step) {
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

/** A tick's label: as many decimals as the step needs, no more (0, 0.5, 1, 1.5). */
export function tickLabel(value, step) {
  const text = value.toFixed(stepDecimals(step));
  return text.includes(".") ? text.replace(/\.?0+$/, "") : text;
}

function roundTo(value, step) {
  const digits = stepDecimals(step) + 1;
  return Number(value.toFixed(digits));
}

/** Draws `{ticks, step}` into `svg` from x `left` to `right`: a light grid line per tick (the zero line darker)
 *  and its label left of the axis; `y` maps a value to its height. */
export function drawYTicks(svg, { ticks, step }, y, left, right) {
  for (const tick of ticks) {
    svg.append(svgEl("line", { x1: left, y1: y(tick), x2: right, y2: y(tick), stroke: tick ? "#eee" : "#999" }));
    svg.append(svgEl("text", { x: left - 4, y: y(tick) + 4, "text-anchor": "end", "font-size": 10, class: "y-tick" }, tickLabel(tick, step)));
  }
}
