// The instructor's knobs as every open page sees them: the live values from /api/stats (`knobs`) are
// written into the notes and the legend wherever the page quotes a limit (data-limit), and each change
// is announced in a banner, so a class sees "대기석 4 → 8" the moment the instructor turns it.
import { PATHS } from "./paths.js";

/** Knob → [the data-limit it fills, how the page writes it, its Korean name]. */
const SHOWN = {
  limited_seats: ["seats", (v) => String(v), "② 대기석"],
  limited_max_wait_s: ["max_wait_s", (v) => String(v), "② 최대 대기(초)"],
  limited_hold_grace_s: ["hold_grace_s", (v) => String(v), "② 자리 보관 유예(초)"],
  batch_window_s: ["window_ms", (v) => String(Math.round(v * 1000)), "③ 모으는 시간(ms)"],
  batch_max: ["batch_max", (v) => String(v), "③ 최대 묶음"],
  batch_max_wait_s: ["batch_max_wait_s", (v) => String(v), "③ 예상 대기 상한(초)"],
  queue_max_jobs: ["queue_max_jobs", (v) => String(v), "④ 번호표 상한"],
  adaptive_target_reviews: ["adaptive_target_reviews", (v) => String(v), "⑤ 서 있는 줄의 목표(리뷰 건수)"],
  adaptive_interval_reviews: ["adaptive_interval_reviews", (v) => String(v), "⑤ 줄을 지켜보는 간격(리뷰 건수)"],
  box_seconds_per_review: ["box_target_s", (v) => String(v), "상자 리뷰당 목표(초)"],
  memory_cap_bytes: ["memory_cap_mib", (v) => String(Math.round(v / 2 ** 20)), "상자 메모리 상한(MiB)"],
};

let seenVersion = null;

/** Writes the live values into the page and announces a change seen since the page opened. */
export function followKnobs(knobs) {
  if (!knobs) return;
  for (const [setting, value] of Object.entries(knobs.values)) {
    const shown = SHOWN[setting];
    if (!shown) continue;
    for (const node of document.querySelectorAll(`[data-limit="${shown[0]}"]`)) node.textContent = shown[1](value);
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
  const shown = SHOWN[change.setting];
  const name = shown ? shown[2] : change.setting;
  const write = shown ? shown[1] : String;
  const news = document.getElementById("knob-news");
  const at = new Date(change.at * 1000).toLocaleTimeString("ko-KR");
  news.textContent = `📢 강사가 바꿨습니다 (${at}): ${name} ${write(change.old)} → ${write(change.new)}`;
  news.dataset.setting = change.setting;
  news.hidden = false;
}
