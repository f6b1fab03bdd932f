// The class's lanes on one canvas: one lane per student (in order of first arrival), each request a bar from its
// arrival to its answer, coloured by outcome and marked by path (①–⑤), the box's deaths, starts and the knobs'
// turns as vertical lines across every lane. A student's requests at once stack in rows inside their lane.
import { MARKS, OUTCOMES, endOf } from "./classdata.js";
import { shownValue } from "./dom.js";
import { pathNamed } from "./paths.js";

const KNOBS = JSON.parse(document.getElementById("lab-knobs").textContent);
const LABEL_W = 210; // the lane's name
const AXIS_H = 76; // the marks' words (two rows), then clock times, above the lanes
const MARK_ROWS = [2, 26];
const LANE_GAP = 3;
const MIN_BAR_PX = 4; // a refusal in 50 ms is still seen
const CLUSTER_S = 1; // a student's requests on one path this close together share one path mark
const TICK_STEPS_S = [5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600];
const FONT = '"Noto Sans KR", "NanumGothic", "Apple SD Gothic Neo", "Malgun Gothic", sans-serif';

const TICKET_TAIL_S = 600; // a ticket whose end is not heard of is drawn waiting this long (④'s default expiry)
const two = (n) => String(n).padStart(2, "0");
const clock = (t) => {
  const d = new Date(t * 1000);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
};

/** The mark's words over its line: "상자 죽음 (메모리 상한)", "② 대기석 (개) 4 → 8". */
export function markWords(mark) {
  if (mark.kind === "death") return `✕ ${MARKS.death.label}${mark.cause === "memory_cap" ? " (메모리 상한)" : mark.cause ? ` (${mark.cause})` : ""}`;
  if (mark.kind === "start") return mark.incarnation > 1 ? `다시 살아남 (${mark.incarnation}번째)` : MARKS.start.label;
  if (mark.kind === "knob") {
    const knob = KNOBS[mark.setting];
    const write = (v) => String(knob ? shownValue(knob.unit, v) : v);
    return `${knob ? knob.name : mark.setting} ${write(mark.old)} → ${write(mark.new)}`;
  }
  return MARKS[mark.kind]?.label || mark.kind;
}

/** Each student's requests in view, in rows: a request takes the first row free when it arrives. */
function lanesOf(lesson, t0, t1, now) {
  const byStudent = new Map();
  const inView = [...lesson.entries.values()].filter((e) => e.arrived < t1 && endOf(e, now) > t0);
  for (const e of inView.sort((a, b) => a.arrived - b.arrived)) {
    if (!byStudent.has(e.student)) byStudent.set(e.student, { key: e.student, ends: [], bars: [] });
    const lane = byStudent.get(e.student);
    let row = lane.ends.findIndex((end) => end <= e.arrived);
    if (row < 0) row = lane.ends.push(0) - 1;
    lane.ends[row] = endOf(e, now);
    lane.bars.push({ e, row });
  }
  return [...byStudent.values()].sort((a, b) => lesson.number(a.key) - lesson.number(b.key));
}

function fill(ctx, outcome, x, y, w, h) {
  ctx.fillStyle = OUTCOMES[outcome].color;
  ctx.fillRect(x, y, w, h);
  if (outcome === "waiting") {
    // Hatched: still open, growing with the clock.
    ctx.save();
    ctx.beginPath();
    ctx.rect(x, y, w, h);
    ctx.clip();
    ctx.strokeStyle = "#ffffff";
    ctx.lineWidth = 2;
    for (let i = x - h; i < x + w; i += 8) {
      ctx.moveTo(i, y + h);
      ctx.lineTo(i + h, y);
    }
    ctx.stroke();
    ctx.restore();
  } else if (outcome === "cut") {
    // Black, ended by a white cross: the box died under it.
    ctx.strokeStyle = "#ffffff";
    ctx.lineWidth = 2;
    ctx.beginPath();
    const s = Math.min(h, 10);
    ctx.moveTo(x + w - s, y);
    ctx.lineTo(x + w, y + h);
    ctx.moveTo(x + w, y);
    ctx.lineTo(x + w - s, y + h);
    ctx.stroke();
  }
}

function axis(ctx, t0, t1, x, width, height) {
  const perS = width / (t1 - t0);
  const step = TICK_STEPS_S.find((s) => s * perS >= 130) || TICK_STEPS_S[TICK_STEPS_S.length - 1];
  ctx.fillStyle = "#111111";
  ctx.font = `18px ${FONT}`;
  ctx.textBaseline = "top";
  ctx.strokeStyle = "#d0d0d0";
  ctx.lineWidth = 1;
  for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
    const at = x(t);
    ctx.beginPath();
    ctx.moveTo(at, AXIS_H - 6);
    ctx.lineTo(at, height);
    ctx.stroke();
    if (at + 3 + ctx.measureText(clock(t)).width <= width) ctx.fillText(clock(t), at + 3, AXIS_H - 24);
  }
}

/** Draws the window [t0, t1] (epoch seconds); returns what it shows, for the canvas's words and the header. */
export function drawLanes(canvas, lesson, t0, t1) {
  const ratio = globalThis.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, width, height);
  const now = lesson.now();
  const plot = width - LABEL_W - 8;
  const x = (t) => LABEL_W + ((t - t0) / (t1 - t0)) * plot;
  axis(ctx, t0, t1, x, width, height);

  const lanes = lanesOf(lesson, t0, t1, now);
  const rows = lanes.reduce((n, lane) => n + lane.ends.length, 0);
  const room = height - AXIS_H - LANE_GAP * lanes.length - 4;
  const rowH = Math.max(2, Math.min(30, rows ? room / rows : 30));
  const counts = {};
  let y = AXIS_H;
  lanes.forEach((lane, i) => {
    const laneH = lane.ends.length * rowH;
    ctx.fillStyle = i % 2 ? "#f2f2f2" : "#ffffff";
    ctx.fillRect(0, y, width, laneH + LANE_GAP);
    ctx.fillStyle = "#111111";
    ctx.font = `bold ${Math.round(Math.max(12, Math.min(24, laneH * 0.8)))}px ${FONT}`;
    ctx.textBaseline = "middle";
    ctx.fillText(lesson.name(lane.key), 8, y + laneH / 2, LABEL_W - 16);
    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, y, plot, laneH + LANE_GAP);
    ctx.clip();
    const clusters = new Map();
    lane.counts = {};
    for (const { e, row } of lane.bars) {
      counts[e.outcome] = (counts[e.outcome] || 0) + 1;
      lane.counts[e.outcome] = (lane.counts[e.outcome] || 0) + 1;
      const top = y + row * rowH + 1;
      const h = Math.max(1, rowH - 2);
      const x0 = x(e.arrived);
      const answered = e.answered ?? (e.outcome === "cut" ? e.arrived : now);
      fill(ctx, e.outcome, x0, top, Math.max(MIN_BAR_PX, x(answered) - x0), h);
      if (e.ticket_end) {
        // A ticket's wait after its 202: a thin line to its end.
        ctx.fillStyle = "#56b4e9";
        ctx.fillRect(x(answered), top + h / 3, Math.max(2, x(e.ticket_end) - x(answered)), Math.max(2, h / 3));
      } else if (e.ticket && e.answered && now - e.answered < TICKET_TAIL_S) {
        // Its end not heard of yet: dashed, growing with the clock.
        ctx.strokeStyle = "#56b4e9";
        ctx.lineWidth = Math.max(2, h / 3);
        ctx.setLineDash([6, 4]);
        ctx.beginPath();
        ctx.moveTo(x(answered), top + h / 2);
        ctx.lineTo(x(now), top + h / 2);
        ctx.stroke();
        ctx.setLineDash([]);
      }
      const key = `${e.path}`;
      const cluster = clusters.get(key);
      if (cluster && e.arrived - cluster.last <= CLUSTER_S) {
        cluster.last = e.arrived;
        cluster.bottom = Math.max(cluster.bottom, top + h);
        cluster.top = Math.min(cluster.top, top);
      } else {
        const made = { path: e.path, x: x0, top, bottom: top + h, last: e.arrived };
        clusters.set(key, made);
        (lane.marks ||= []).push(made);
      }
    }
    for (const mark of lane.marks || []) {
      const size = Math.round(Math.max(14, Math.min(28, mark.bottom - mark.top)));
      ctx.font = `bold ${size}px ${FONT}`;
      ctx.textBaseline = "middle";
      const glyph = pathNamed(mark.path)?.number || "?";
      const gx = mark.x - ctx.measureText(glyph).width - 2;
      ctx.lineWidth = 4;
      ctx.strokeStyle = "#ffffff";
      ctx.strokeText(glyph, gx, (mark.top + mark.bottom) / 2);
      ctx.fillStyle = "#111111";
      ctx.fillText(glyph, gx, (mark.top + mark.bottom) / 2);
    }
    ctx.restore();
    y += laneH + LANE_GAP;
  });

  const rowEnds = MARK_ROWS.map(() => -Infinity);
  const drawnMarks = [];
  for (const mark of lesson.allMarks()) {
    if (mark.at < t0 || mark.at > t1) continue;
    const at = x(mark.at);
    drawnMarks.push({ kind: mark.kind, at: mark.at, x: at, words: markWords(mark) });
    ctx.strokeStyle = MARKS[mark.kind]?.color || "#111111";
    ctx.lineWidth = mark.kind === "death" ? 5 : 3;
    ctx.setLineDash(mark.kind === "lost" ? [8, 6] : []);
    ctx.beginPath();
    ctx.moveTo(at, MARK_ROWS[0]);
    ctx.lineTo(at, height);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.font = `bold 18px ${FONT}`;
    ctx.textBaseline = "top";
    ctx.fillStyle = ctx.strokeStyle;
    // Words right of the line, or left of it at the right edge; marks close together: the next row, else after.
    const words = markWords(mark);
    const w = ctx.measureText(words).width;
    let left = at + w + 6 > width ? at - w - 6 : at + 6;
    let row = rowEnds.findIndex((end) => end + 16 <= left);
    if (row < 0) {
      row = rowEnds.indexOf(Math.min(...rowEnds));
      left = Math.min(rowEnds[row] + 16, width - w - 2);
    }
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(left - 2, MARK_ROWS[row], w + 4, 22);
    ctx.fillStyle = MARKS[mark.kind]?.color || "#111111";
    ctx.fillText(words, left, MARK_ROWS[row] + 1);
    rowEnds[row] = left + w;
  }
  return {
    students: lanes.length,
    requests: lanes.reduce((n, lane) => n + lane.bars.length, 0),
    counts,
    marks: drawnMarks, // each line across the lanes: its kind, moment, x (CSS px) and words
    lanes: lanes.map((lane) => ({ key: lane.key, name: lesson.name(lane.key), requests: lane.bars.length, counts: lane.counts })),
  };
}
