// Small drawing helpers shared by the rows, the comparison and the figures.

/** Milliseconds as people read them: `850ms`, `2.31초`, or `–` when unknown. */
export function fmtMs(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "–";
  return ms < 1000 ? `${Math.round(ms)}ms` : `${(ms / 1000).toFixed(2)}초`;
}

/** An HTML element with attributes (`class`, `dataset` or any other) and children (null ones skipped). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c !== null && c !== undefined));
  return node;
}

// A knob's value as people read and type it: bytes in MiB (the API speaks bytes), everything else as it is.
const MIB = 2 ** 20;
export const shownValue = (unit, v) => (unit === "bytes" ? Math.round(v / MIB) : v);
export const sentValue = (unit, v) => (unit === "bytes" ? Math.round(v * MIB) : v);

const SVG_NS = "http://www.w3.org/2000/svg";

/** An SVG element with attributes and an optional text: the figures' one way to draw. */
export function svgEl(name, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}
