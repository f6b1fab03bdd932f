// The burst page, wired: fire N reviews at one path at once, draw one timing bar per request from what
// the server says (Server-Timing) and what the browser measured, keep the last burst of each path,
// review mode and size for comparing, and show the box's live status beside it. Each role is a module
// of its own (paths, timing, tickets, runner, summary, rows, compare, store, panel, model, batching); this one
// holds the page's state and its controls. From the console: `await import("/static/js/timing.js")`.
import { showBatchingFigure, showStudentBatches } from "./batching.js";
import { showCostCurve } from "./costcurve.js";
import { burstLabel, drawCompareChart, renderCompare } from "./compare.js";
import { fmtMs } from "./dom.js";
import { showModel } from "./model.js";
import "./nickname.js"; // the student's name on the instructor's class view: a form of its own in the top bar
import { boxDeaths, lost, onBoxDied, record, startPanel } from "./panel.js";
import { showProtocolNotes } from "./protocol.js";
import { ranIntoDeath, renderRows, renderSummary, tickElapsed } from "./rows.js";
import { loadSamples, newBurst, runBurst } from "./runner.js";
import { SavedBursts } from "./store.js";
import { summarize } from "./summary.js";

const MAX_BURST = 50;

const saved = new SavedBursts();
const state = { view: null, running: false };

let renderQueued = false;
function scheduleRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
  });
}

function render() {
  const burst = state.view;
  showStudentBatches(burst); // ③'s figure: the shown burst's batches, once it has ended
  const status = document.getElementById("burst-status");
  if (!burst) {
    document.getElementById("rows").tBodies[0].replaceChildren();
    document.getElementById("summary").replaceChildren();
    document.getElementById("burst-box").hidden = true;
    document.getElementById("burst-title").textContent = "";
    return;
  }
  document.getElementById("burst-title").textContent = burstLabel(burst) + (burst.restored ? " · 저장된 발사" : "");
  renderRows(burst, boxDeaths());
  const done = burst.rows.filter((r) => r.state === "done").length;
  const scaleMs = Number(document.getElementById("rows").dataset.scaleMs);
  status.textContent = burst.running
    ? `발사 중… ${done}/${burst.rows.length} 끝남`
    : `${new Date(burst.firedAt).toLocaleTimeString("ko-KR")}에 발사, ${fmtMs(burst.summary.durationMs)} 만에 모두 끝남. ` +
      `막대는 가장 느린 요청(${fmtMs(scaleMs)}) 기준.`;
  const died = burst.rows.filter((row) => ranIntoDeath(row, boxDeaths())).length;
  if (died) status.textContent += ` ⚠ 발사 중 상자가 죽어 ${died}개 요청이 502·연결 끊김으로 끝남.`;
  status.dataset.died = String(died);
  status.dataset.state = burst.running ? "running" : "done";
  renderSummary(burst);
}

function showCompare() {
  renderCompare(saved, selectBurst);
}

function selectedPath() {
  return document.querySelector('input[name="path"]:checked').value;
}

/** Shows the path's explanation and its most recent saved burst (any mode or size). */
function showPath(path, key = null) {
  for (const note of document.querySelectorAll("[data-path-note]")) note.hidden = note.dataset.pathNote !== path;
  if (state.running) return;
  const shown = key ? saved.get(key) : saved.latestOf(path);
  state.view = shown ? { ...shown, restored: true } : null;
  render();
}

function selectBurst(key) {
  const burst = saved.get(key);
  if (!burst || state.running) return;
  document.querySelector(`input[name="path"][value="${burst.path}"]`).checked = true;
  showPath(burst.path, key);
}

async function fireBurst(path, n, mode, retry) {
  const { burst, tag } = newBurst(path, n, mode, retry);
  state.view = burst;
  state.running = true;
  burst.t0 = performance.now();
  render();
  // A death's peak arrives with the next incarnation, after the burst has ended: redraw and keep it then.
  const recorder = record(() => {
    saved.save(burst);
    render();
    showCompare();
  });
  const ticker = setInterval(() => tickElapsed(state.view), 100);
  try {
    await runBurst(burst, tag, { changed: scheduleRender, boxDeaths });
    // A 502 or a cut connection may be the box dying: ask now, so the record says so (the panel's socket
    // may not have closed yet, and it hears from the next incarnation only seconds later).
    if (burst.rows.some((row) => row.status === 502 || row.status === null)) await lost();
  } finally {
    clearInterval(ticker);
    state.running = false;
    burst.running = false;
    burst.summary = summarize(burst);
    burst.box = recorder.stop();
    saved.save(burst);
    render();
    showCompare();
  }
}

function burstSize() {
  const input = document.getElementById("burst-size");
  const n = Math.min(MAX_BURST, Math.max(1, Math.round(Number(input.value) || 12)));
  input.value = String(n);
  document.getElementById("burst-size-range").value = String(n);
  return n;
}

function wire() {
  const fire = document.getElementById("fire");
  onBoxDied(render); // rows whose connection the dead box took with it are relabelled
  fire.addEventListener("click", async () => {
    if (state.running) return;
    fire.disabled = true;
    try {
      const mode = document.querySelector('input[name="mode"]:checked').value;
      await fireBurst(selectedPath(), burstSize(), mode, document.getElementById("retry").checked);
    } finally {
      fire.disabled = false;
    }
  });
  for (const radio of document.querySelectorAll('input[name="path"]')) {
    radio.addEventListener("change", () => showPath(radio.value));
  }
  document.getElementById("burst-size").addEventListener("change", burstSize);
  document.getElementById("burst-size-range").addEventListener("input", (event) => {
    document.getElementById("burst-size").value = event.target.value;
  });
  document.getElementById("forget").addEventListener("click", () => {
    saved.forget();
    showCompare();
    showPath(selectedPath());
  });
  let resizeQueued = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeQueued);
    resizeQueued = setTimeout(() => drawCompareChart(saved), 150); // the chart's width follows its card
  });
}

showModel();
showBatchingFigure();
showCostCurve();
showProtocolNotes();
startPanel();
wire();
showPath(selectedPath());
showCompare();
loadSamples();
