// The instructor's knobs as every open page sees them: the live values from /api/stats (`knobs`) are
// written into the notes and the legend wherever the page quotes a limit (data-limit), and each change
// is announced in a banner, so a class sees "대기석 4 → 8" the moment the instructor turns it.
import { shownValue } from "./dom.js";
import { PATHS } from "./paths.js";

/** setting → {name, unit, limit, scale}: the lab's knobs as the server lists them (app/api/page.py, `page_knobs`). */
const KNOBS = JSON.parse(document.getElementById("lab-knobs").textContent);

/** How the page's data-limit spans quote a value: × scale (seconds as ms, bytes as MiB), whole unless unscaled. */
const quoted = (knob, v) => String(knob.scale === 1 ? v : Math.round(v * knob.scale));

let seenVersion = null;

/** Writes the live values into the page and announces a change seen since the page opened. */
export function followKnobs(knobs) {
  if (!knobs) return;
  for (const [setting, value] of Object.entries(knobs.values)) {
    const knob = KNOBS[setting];
    if (!knob?.limit) continue;
    for (const node of document.querySelectorAll(`[data-limit="${knob.limit}"]`)) node.textContent = quoted(knob, value);
  }
  // The radios' words come from the registry ("1개 + 대기석 4"): a path with seats ends in its seat count.
  const seats = knobs.values.limited_seats;
  for (const path of PATHS.filter((p) => p.seats && seats !== undefined)) {
    const words = document.querySelector(`input[name="path"][value="${path.name}"]`)?.closest("label")?.querySelector("small");
    if (words) words.textContent = words.textContent.replace(/\d+$/, String(seats));
  }
  if (seenVersion !== null && knobs.version > seenVersion && knobs.last) announce(knobs.last);
  seenVersion = knobs.version;
  document.body.dataset.knobsVersion = String(knobs.version);
}

function announce(change) {
  // Named and written as the instructor's page shows it: "③ 모으는 시간 (초) 0.025 → 0.1".
  const knob = KNOBS[change.setting];
  const name = knob ? knob.name : change.setting;
  const write = (v) => String(knob ? shownValue(knob.unit, v) : v);
  const news = document.getElementById("knob-news");
  const at = new Date(change.at * 1000).toLocaleTimeString("ko-KR");
  news.textContent = `📢 강사가 바꿨습니다 (${at}): ${name} ${write(change.old)} → ${write(change.new)}`;
  news.dataset.setting = change.setting;
  news.hidden = false;
}
