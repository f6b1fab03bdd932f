// The box's deaths as this page sees them, and the large banner that says so at once. The live socket
// closes the moment the box dies (its process takes the connection with it); one look at /api/stats then
// tells a dead box (502 from the classroom front, or no connection at all) from a hiccup. When /api/stats
// answers again, the banner says the box is back, why it died and how often it has died since the lab
// started (`box.deaths`, not its incarnation). Rows that ran into a death are relabelled by listeners.

const BACK_SHOWN_MS = 60_000;
const LOOK_MS = 700; // a live box answers /api/stats in milliseconds, even during a burst (HTTP/2 or its own socket)
const DOWN_STATUSES = new Set([502, 503, 504]); // the front's answers for a box it cannot reach

let known; // box.deaths as /api/stats last said it; undefined until it says
let seen = 0; // the deaths this page counts: `known`, or one more while the box is down
let down = false;
let checking = null; // the look at /api/stats under way, if any
let hideTimer = null;
const listeners = [];

/** How many times the box has died, as this page knows it (counted the moment it is seen down). */
export const boxDeaths = () => seen;

/** `listener()` is called whenever the box is seen to have died again. */
export function onBoxDied(listener) {
  listeners.push(listener);
}

function count(deaths) {
  if (deaths <= seen) return;
  seen = deaths;
  for (const listener of listeners) listener();
}

function show(state, title, detail) {
  const alert = document.getElementById("box-alert");
  alert.dataset.state = state;
  alert.dataset.deaths = String(seen);
  document.getElementById("box-alert-title").textContent = title;
  document.getElementById("box-alert-detail").textContent = detail;
  alert.hidden = false;
  clearTimeout(hideTimer);
  if (state === "back") hideTimer = setTimeout(() => (alert.hidden = true), BACK_SHOWN_MS);
}

function goneDown(why) {
  if (down) return;
  down = true;
  count((known ?? 0) + 1);
  show("down", "상자가 죽었습니다", `다시 살아나는 중… 지금 보낸 요청은 502로 끝납니다 (${why})`);
}

/** Every /api/stats the panel receives. */
export function noteStats(stats) {
  const box = stats.box;
  if (!box) return;
  const grew = known !== undefined && box.deaths > known;
  known = box.deaths;
  if (down && !grew) {
    // It never died (a closed socket and a slow answer): take back the death counted when it went quiet.
    down = false;
    seen = box.deaths;
    document.getElementById("box-alert").hidden = true;
    for (const listener of listeners) listener();
    return;
  }
  if (!down && !grew) {
    seen = Math.max(seen, box.deaths);
    return;
  }
  down = false;
  count(box.deaths);
  const last = box.last_death;
  const cause = !last ? "알 수 없음" : last.cause === "memory_cap" ? "메모리 상한을 넘어 커널이 죽임" : last.cause;
  show("back", "상자가 다시 살아났습니다", `죽은 까닭: ${cause} · 실습 시작 뒤 ${box.deaths}번 죽음`);
}

/**
 * The live socket closed, a poll failed or a request met a 502: ask /api/stats once, now; a 502 or no answer
 * within LOOK_MS: down. Resolves when the look is over (one look at a time: a second caller shares it), so a
 * burst whose requests died can wait for the verdict before it keeps its record.
 */
export function lost() {
  if (down) return Promise.resolve();
  if (checking === null) checking = look().finally(() => (checking = null));
  return checking;
}

async function look() {
  try {
    // A restarting box's new socket holds the question until its model is loaded: no answer soon is down too.
    const signal = AbortSignal.timeout(LOOK_MS);
    const response = await fetch("/api/stats", { cache: "no-store", priority: "high", signal });
    if (DOWN_STATUSES.has(response.status)) goneDown(`HTTP ${response.status}`);
    else if (response.ok) noteStats(await response.json());
  } catch (err) {
    goneDown(err.name === "TimeoutError" ? "응답 없음" : "연결 안 됨");
  }
}
