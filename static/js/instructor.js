// The instructor's page: lists the knobs (GET /api/knobs) and turns one (PUT /api/knobs/<knob>) with the
// token from this page's address (?token=…), the one the box printed at start-up: the lesson's, so it still
// works after the box dies and comes back. The page looks at /api/knobs every few seconds: while the box is
// gone (no connection, or the classroom front's 502) it says so in a banner and keeps looking, and when the
// box answers again it reads the live values back in place, without a reload and without losing what was typed.
// A death is shown as the student pages show it (death.js's banner: down, then back with its cause and count).
import { boxDeaths, lost, noteStats } from "./death.js";
import { el, sentValue, shownValue } from "./dom.js";

const token = new URLSearchParams(location.search).get("token") || "";
const LIVE_LOOK_MS = 3000; // how often a live box is asked for its values (another tab, or a restart, changed them)
const DOWN_LOOK_MS = 1000; // how often a gone box is asked whether it is back
const DOWN_STATUSES = new Set([502, 503, 504]); // the classroom front's answers for a box it cannot reach
const BACK_SHOWN_MS = 60_000;
// A restarting box holds a question in its socket's backlog until its model is loaded; a look still unanswered
// after this counts as gone (a live box answers in milliseconds, unless this browser's six HTTP/1.1
// connections to it are all busy with a burst).
const LOOK_LIMIT_MS = 15_000;
const shown = (knob, v) => shownValue(knob.unit, v);
const sent = (knob, v) => sentValue(knob.unit, v);

let looking = null; // the next look's timer
let generation = 0; // the latest look: an older one that answers late neither draws nor schedules
let down = false;
let hideTimer = null;

class BoxGone extends Error {}

/** fetch, with a gone box (no connection, or the front's 502/503/504) as BoxGone. */
async function ask(url, options = {}) {
  let response;
  try {
    response = await fetch(url, { cache: "no-store", ...options });
  } catch (err) {
    throw new BoxGone(err.name === "TimeoutError" ? "응답 없음" : "연결 안 됨");
  }
  // The box's own 503s (shutting down, too many connections) are JSON in its one error shape: it is there.
  if (DOWN_STATUSES.has(response.status) && !(response.headers.get("content-type") || "").includes("json")) {
    throw new BoxGone(`HTTP ${response.status}`);
  }
  return response;
}

function showLink(state, title, detail) {
  const banner = document.getElementById("box-link");
  banner.dataset.state = state;
  banner.hidden = false;
  document.getElementById("box-link-title").textContent = title;
  document.getElementById("box-link-detail").textContent = detail;
  clearTimeout(hideTimer);
  if (state === "back") hideTimer = setTimeout(() => (banner.hidden = true), BACK_SHOWN_MS);
}

/** One look at the knobs; schedules the next (sooner while the box is gone). */
async function look() {
  clearTimeout(looking);
  const mine = ++generation;
  let knobs = null;
  let gone = null;
  try {
    const response = await ask("/api/knobs", { signal: AbortSignal.timeout(LOOK_LIMIT_MS) });
    if (!response.ok) throw new BoxGone(`HTTP ${response.status}`);
    knobs = (await response.json()).knobs;
  } catch (err) {
    gone = err instanceof BoxGone ? err.message : "답을 읽지 못함"; // e.g. the connection dropped mid-answer
  }
  if (mine !== generation) return; // a newer look (after a turn) has taken over
  if (gone === null) {
    draw(knobs);
    if (down) showLink("back", "상자가 다시 살아났습니다", "값을 다시 읽었습니다. 같은 주소(같은 토큰)로 계속 바꿀 수 있습니다.");
  } else {
    showLink("down", "상자에 닿지 않습니다", `죽었거나 다시 켜지는 중입니다 (${gone}). 살아나면 이 화면이 이어집니다…`);
  }
  down = gone !== null;
  watchDeaths(down);
  looking = setTimeout(look, down ? DOWN_LOOK_MS : LIVE_LOOK_MS);
}

/** Every look also reads the box's deaths (/api/stats), so a death between two looks is said when the box is back;
 * a box gone from this page is looked at as the student pages look (death.js: a 502 or no answer is down). */
async function watchDeaths(gone) {
  if (!gone) {
    try {
      const response = await fetch("/api/stats", { cache: "no-store", signal: AbortSignal.timeout(LOOK_LIMIT_MS) });
      if (response.ok) {
        noteStats(await response.json());
        // The deaths this page knows of, shown or not: from here on a death is counted, not taken for a hiccup.
        document.getElementById("box-alert").dataset.deaths = String(boxDeaths());
        return;
      }
    } catch {
      // no answer, or it broke off: death.js looks again, with its own short limit
    }
  }
  return lost();
}

/** The table, updated in place: a value being typed is never overwritten. */
function draw(knobs) {
  const body = document.querySelector("#knobs tbody");
  const rows = new Map([...body.querySelectorAll("tr")].map((row) => [row.dataset.setting, row]));
  body.replaceChildren(
    ...knobs.map((knob) => {
      const row = rows.get(knob.setting) || newRow(knob);
      const low = shown(knob, knob.low);
      const high = shown(knob, knob.high);
      const input = row.querySelector("input");
      // The knob's own range and step (GET /api/knobs), in the unit typed here: the values the box takes.
      Object.assign(input, { min: String(low), max: String(high), step: String(shown(knob, knob.step)) });
      if (!input.dataset.typed) input.value = String(shown(knob, knob.value));
      row.querySelector(".now").textContent = String(shown(knob, knob.value));
      row.querySelector(".range").textContent = `${low} – ${high}`;
      row.knob = knob;
      return row;
    }),
  );
}

function newRow(knob) {
  const input = el("input", { type: "number" });
  input.addEventListener("input", () => (input.dataset.typed = "1"));
  const apply = el("button", { type: "button" }, "적용");
  const row = el(
    "tr",
    { dataset: { setting: knob.setting } },
    el("td", {}, knob.name), // the registry's Korean name (GET /api/knobs)
    el("td", { class: "num now" }),
    el("td", {}, input),
    el("td", { class: "range" }),
    el("td", {}, apply),
  );
  apply.addEventListener("click", () => turn(row.knob, input));
  return row;
}

async function turn(knob, input) {
  const result = document.getElementById("knob-result");
  const value = Number(input.value);
  try {
    const response = await ask(`/api/knobs/${knob.setting}`, {
      method: "PUT",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ value: sent(knob, value) }),
    });
    const body = await response.json().catch(() => ({}));
    result.dataset.status = String(response.status);
    if (response.ok) delete input.dataset.typed;
    result.textContent = response.ok
      ? `${knob.name} → ${value}: 적용했습니다. 열린 학생 화면에 알림이 갑니다.`
      : response.status === 403
        ? "토큰이 맞지 않습니다: 상자가 시작할 때 출력한 강사용 주소(토큰 포함)로 이 화면을 여세요."
        : `바꾸지 못했습니다 (${response.status}): ${body.detail || ""}`;
  } catch (err) {
    if (!(err instanceof BoxGone)) throw err;
    result.dataset.status = "gone";
    result.textContent = `보내지 못했습니다 (${err.message}): 상자가 답하지 않습니다. 살아나면 '지금 값'을 다시 읽으니, 확인하고 다시 적용하세요.`;
  }
  await look();
}

look();
