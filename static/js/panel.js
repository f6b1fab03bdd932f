// The live box panel (상자 상태). It listens on a WebSocket (/api/stats/live pushes the JSON of /api/stats
// twice a second): during a burst the page's requests hold all six of the browser's connections to the
// box, and a poll would queue behind them; a WebSocket is not counted against those six (measured:
// docs/burst-page.md). If the socket fails, the panel polls /api/stats and says so; it always shows
// how old its values are. Everything shown comes from the API; nothing is computed or invented here.
import { followKnobs } from "./knobs.js";
import { boxDeaths, lost, noteStats } from "./death.js";
import { PATHS } from "./paths.js";
import { sixConnections } from "./protocol.js";
import { Recording, describeRecording, mib, tookDeathPeak } from "./recording.js";

const POLL_EVERY_MS = 1000;
// A socket that closed or was refused is asked for again after a growing, jittered wait (5 s, 10 s, … 60 s, each
// ×0.5–1.5), so forty pages behind one school address that lost their sockets together do not come back together.
const RECONNECT_FIRST_MS = 5000;
const RECONNECT_MOST_MS = 60000;
// A poll the front refuses (429: this student over their share) waits longer each time, up to this.
const POLL_MOST_MS = 16000;
// The box closes a live socket with 1013 ("Try Again Later") when its live connections are all taken
// (docs/reliability.md): poll instead, and ask for a socket again only now and then.
const TRY_AGAIN_LATER = 1013;
const RECONNECT_WHEN_FULL_MS = 30000;
const STALE_AFTER_MS = 2000; // four missed pushes, or two missed polls

let channel = "connecting"; // "websocket" | "polling" | "connecting"
let boxFull = false; // the last socket was refused with 1013: the box has no live seat left
let lastAt = null;
let last = null;
let pollTimer = null;
let reconnectMs = RECONNECT_FIRST_MS;
let pollEveryMs = POLL_EVERY_MS;
const recordings = new Set();
// The last finished burst the box died in, until the next incarnation says how high the dead one's memory went.
let awaitingDeathPeak = null;

const jittered = (ms) => ms * (0.5 + Math.random());

function setText(id, text) {
  document.getElementById(id).textContent = text;
}

function sum(values) {
  return Object.values(values || {}).reduce((a, b) => a + b, 0);
}

export { boxDeaths, lost, onBoxDied } from "./death.js";

/** The box's memory as the kernel counts it against the cap (the cgroup's), else RSS: MiB and % of the cap. */
export function memoryText(memory) {
  if (!memory) return "–";
  const pct = memory.pct_of_cap == null ? "" : ` (상한의 ${memory.pct_of_cap.toFixed(0)}%)`;
  return `${mib(memory.bytes)}${pct}${memory.source === "rss" ? " · RSS" : ""}`;
}

/**
 * The memory as a bar on the cap: the lab's own server, and apart from it what the box holds for the seed's
 * libraries (the stand-in, /api/stats memory.stand_in_bytes), so a student sees how much of the box is which.
 */
export function drawMemoryBar(bar, memory) {
  const cap = memory && memory.cap_bytes;
  bar.hidden = !cap;
  if (!cap) return;
  const standIn = memory.stand_in_bytes || 0;
  const lab = memory.lab_bytes ?? memory.bytes - standIn;
  const where = memory.stand_in_measured_here ? "이 컴퓨터에서 잰 값" : "다른 컴퓨터에서 잰 값";
  const parts = [
    ["lab", lab, `실습 서버 ${mib(lab)}`],
    ["stand-in", standIn, `교재 서버의 라이브러리 몫 ${mib(standIn)} (${where})`],
  ];
  bar.replaceChildren(
    ...parts
      .filter(([, bytes]) => bytes > 0)
      .map(([kind, bytes, title]) => {
        const seg = document.createElement("span");
        seg.className = `mem-seg mem-${kind}`;
        seg.dataset.bytes = String(bytes);
        seg.style.width = `${Math.min(100, (bytes * 100) / cap).toFixed(2)}%`;
        seg.title = title;
        return seg;
      }),
  );
  bar.setAttribute("aria-label", parts.filter(([, b]) => b > 0).map(([, , t]) => t).join(", "));
  document.getElementById("box-memory-parts").textContent = standIn
    ? `실습 서버 ${mib(lab)} + 교재 서버의 라이브러리 몫 ${mib(standIn)} (${where})`
    : "";
}

/** The speed loop's one value (/api/stats box.speed): target, the last minute's median, how it is held. */
function speedText(speed) {
  const achieved = speed.achieved_s == null ? "아직 측정 없음" : `지난 1분 중앙값 ${speed.achieved_s.toFixed(2)}초`;
  const how = speed.method === "quota" ? "CPU 할당" : "CPU 태우기";
  const text = `목표 ${speed.target_s}초 · ${achieved} · ${how} ${(speed.cpu_fraction * 100).toFixed(0)}%`;
  return speed.at_bound ? `${text} · ⚠ 목표에 못 맞춤: ${speed.at_bound}` : text;
}

function renderStats(stats) {
  const lane = stats.lane;
  const laneEl = document.getElementById("box-lane");
  laneEl.textContent = lane.busy ? `추론 중 (리뷰 ${lane.current_batch}개)` : "쉬는 중";
  laneEl.className = lane.busy ? "busy" : "idle";
  laneEl.dataset.busy = String(lane.busy);
  // The box's one CPU: the lane's inference and every ① beside it (① bypasses the lane, not the CPU).
  const cpu = stats.cpu;
  const cpuEl = document.getElementById("box-cpu");
  cpuEl.textContent = cpu.inferences ? `추론 ${cpu.inferences}개가 나눠 씀 (레인 ${cpu.lane} + ① ${cpu.naive})` : "쉬는 중";
  cpuEl.className = cpu.inferences ? "busy" : "idle";
  cpuEl.dataset.inferences = String(cpu.inferences);
  // One waiting number, the sum of the rows below it, each part named.
  const parts = PATHS.map(({ name, number }) => [number, stats.paths[name].waiting]);
  const total = parts.reduce((a, [, n]) => a + n, 0);
  const shown = parts.filter(([, n]) => n > 0).map(([number, n]) => `${number} ${n}`);
  const waitingEl = document.getElementById("box-waiting");
  waitingEl.textContent = `${total}개${shown.length ? ` (${shown.join(" + ")})` : ""}`;
  waitingEl.dataset.total = String(total);
  const speed = stats.box && stats.box.speed;
  document.getElementById("box-service-label").textContent = speed ? "리뷰 속도" : "측정한 처리 시간";
  setText("box-service", speed ? speedText(speed) : `리뷰당 ${lane.service_s_per_review.toFixed(2)}초`);
  for (const { name } of PATHS.filter((p) => p.seats)) {
    // Held seats beside the taken ones: a 429 while seats look free is a seat kept for a returner.
    const seated = stats.paths[name];
    const held = seated.held ? ` · 맡아 둔 자리 ${seated.held}` : "";
    const seatsEl = document.getElementById("box-seats");
    seatsEl.textContent = `${seated.seats_taken} / ${seated.capacity}${held} (추론 ${seated.in_flight} + 대기 ${seated.waiting})`;
    Object.assign(seatsEl.dataset, { taken: String(seated.seats_taken), held: String(seated.held ?? 0) });
  }
  const jobs = stats.jobs;
  setText("box-jobs", `대기 ${jobs.queued || 0} · 실행 ${jobs.running || 0} · 완료 ${jobs.done || 0}`);
  const memory = document.getElementById("box-memory");
  memory.dataset.memoryBytes = String(stats.memory.bytes);
  memory.dataset.pctOfCap = stats.memory.pct_of_cap == null ? "" : String(stats.memory.pct_of_cap);
  memory.textContent = memoryText(stats.memory);
  drawMemoryBar(document.getElementById("box-memory-bar"), stats.memory);
  setText("box-cache", `적중 ${stats.cache.hits} · 미스 ${stats.cache.misses} · ${stats.cache.size}개`);
  // `box` is there once the box (app/box) reports on /api/stats; the panel works without it.
  const box = stats.box;
  if (box && box.deaths) {
    const cause = box.last_death && box.last_death.cause === "memory_cap" ? "메모리 상한" : box.last_death?.cause;
    setText("box-death", `실습 시작 뒤 상자가 ${box.deaths}번 죽었습니다 (마지막: ${cause})`);
    document.getElementById("box-death").hidden = false;
  }
  const body = document.getElementById("box-paths");
  body.replaceChildren(
    ...PATHS.map(({ name, label }) => {
      const tr = document.createElement("tr");
      const p = stats.paths[name];
      Object.assign(tr.dataset, { path: name, inFlight: String(p.in_flight), waiting: String(p.waiting) });
      for (const value of [label, p.in_flight, p.waiting, sum(stats.rejections[name])]) {
        const td = document.createElement("td");
        td.textContent = String(value);
        tr.append(td);
      }
      return tr;
    }),
  );
}

function received(stats, via) {
  const now = performance.now();
  channel = via;
  for (const recording of recordings) recording.observe(stats, now, channel);
  last = stats;
  lastAt = now;
  settleDeathPeak(stats);
  noteStats(stats);
  renderStats(stats);
  followKnobs(stats.knobs);
  for (const recording of recordings) renderRecording(recording.snapshot(channel, boxDeaths()));
  showAge();
}

// ---------------------------------------------------------------- freshness
// The browser's six connections hold back a poll only over HTTP/1.1.
const SIX_NOTE = () => (sixConnections() ? ": 발사 중에는 브라우저 연결 6개 뒤에 줄을 섭니다" : "");

function showAge() {
  const panel = document.getElementById("box-panel");
  const age = lastAt === null ? null : performance.now() - lastAt;
  const stale = age === null || age > STALE_AFTER_MS;
  panel.dataset.channel = channel;
  panel.dataset.full = String(boxFull);
  panel.dataset.stale = String(stale);
  panel.dataset.ageMs = age === null ? "" : age.toFixed(0);
  document.getElementById("box-updated").textContent =
    lastAt === null ? "연결 중…" : stale ? `${(age / 1000).toFixed(0)}초 전 값 (오래됨)` : "실시간";
  const how =
    channel === "websocket"
      ? "WebSocket으로 0.5초마다 받음"
      : channel === "polling" && boxFull
        ? `상자의 실시간 연결이 가득 차서(1013) 1초마다 묻는 중${SIX_NOTE()}`
        : channel === "polling"
          ? `WebSocket 없이 1초마다 묻는 중${SIX_NOTE()}`
          : "연결 중";
  setText("box-age", age === null ? how : `${(age / 1000).toFixed(1)}초 전 값 · ${how}`);
}

// ---------------------------------------------------------------- channels
function openSocket() {
  let opened = false;
  let socket;
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/stats/live`;
  try {
    socket = new WebSocket(url);
  } catch {
    startPolling();
    return;
  }
  socket.addEventListener("open", () => {
    opened = true;
    reconnectMs = RECONNECT_FIRST_MS;
  });
  socket.addEventListener("message", (event) => {
    boxFull = false;
    stopPolling();
    received(JSON.parse(event.data), "websocket");
  });
  socket.addEventListener("close", (event) => {
    for (const recording of recordings) recording.lost = true;
    boxFull = event.code === TRY_AGAIN_LATER;
    if (!boxFull) lost(); // a dying box closes the socket first: say so now, not at the next poll
    if (opened) channel = "polling";
    startPolling();
    setTimeout(openSocket, jittered(boxFull ? RECONNECT_WHEN_FULL_MS : reconnectMs));
    reconnectMs = Math.min(reconnectMs * 2, RECONNECT_MOST_MS);
  });
}

function startPolling() {
  if (pollTimer === null) pollTimer = setTimeout(poll, 0);
}

function stopPolling() {
  clearTimeout(pollTimer);
  pollTimer = null;
}

async function poll() {
  try {
    const response = await fetch("/api/stats", { cache: "no-store", priority: "high" });
    if (response.status === 429) {
      // The front's "한 사람이 너무 자주", not the box's state: ask less often rather than spend this student's share.
      pollEveryMs = Math.min(pollEveryMs * 2, POLL_MOST_MS);
    } else {
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const stats = await response.json();
      pollEveryMs = POLL_EVERY_MS;
      if (pollTimer !== null) received(stats, "polling");
    }
  } catch (err) {
    setText("box-updated", `연결 끊김 (${err.message})`);
    lost();
  }
  if (pollTimer !== null) pollTimer = setTimeout(poll, jittered(pollEveryMs));
}

// ---------------------------------------------------------------- per-burst records
function renderRecording(snapshot) {
  const line = document.getElementById("box-burst");
  line.hidden = false;
  line.textContent = `이번 발사: ${describeRecording(snapshot)}`;
  line.dataset.record = JSON.stringify(snapshot);
}

function renderLast(snapshot) {
  renderRecording(snapshot);
  document.getElementById("box-burst").textContent = `마지막 발사: ${describeRecording(snapshot)}`;
}

/**
 * Call when a burst starts; call stop() on the result when it ends, to get what the panel saw. A burst the box
 * died in ends before the panel can sample its peak: once the next incarnation reports the dead one's peak
 * (`box.last_death.peak_bytes`), the record takes it and `changed()` is called.
 */
export function record(changed = () => {}) {
  const recording = new Recording(last, lastAt, boxDeaths());
  const startedAt = Date.now();
  recordings.add(recording);
  renderRecording(recording.snapshot(channel, boxDeaths()));
  return {
    stop() {
      recordings.delete(recording);
      const snapshot = recording.snapshot(channel, boxDeaths());
      renderLast(snapshot);
      awaitingDeathPeak = snapshot.boxDied ? { snapshot, startedAt, changed } : null;
      if (last) settleDeathPeak(last);
      return snapshot;
    },
  };
}

function settleDeathPeak(stats) {
  const death = stats.box && stats.box.last_death;
  if (!awaitingDeathPeak || !death || death.peak_bytes == null || death.at * 1000 < awaitingDeathPeak.startedAt) return;
  const { snapshot, changed } = awaitingDeathPeak;
  awaitingDeathPeak = null;
  tookDeathPeak(snapshot, death.peak_bytes, stats.memory && stats.memory.cap_bytes);
  renderLast(snapshot);
  changed();
}

/** Starts the panel: the socket (or polling) and the age shown four times a second. */
export function startPanel() {
  setInterval(showAge, 250);
  openSocket();
}
