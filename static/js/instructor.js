// The instructor's page: lists the knobs (GET /api/knobs) and turns one (PUT /api/knobs/<knob>) with the
// token from this page's address (?token=…), the one the box printed at start-up.
import { el } from "./dom.js";

const NAMES = {
  limited_seats: "② 대기석 (개)",
  limited_max_wait_s: "② 최대 대기 (초)",
  batch_window_s: "③ 모으는 시간 (초)",
  batch_max: "③ 최대 묶음 (개)",
  batch_max_wait_s: "③ 예상 대기 상한 (초, 0 = 끔)",
  queue_max_jobs: "④ 번호표 상한 (장)",
};
const token = new URLSearchParams(location.search).get("token") || "";

async function load() {
  const body = (await (await fetch("/api/knobs", { cache: "no-store" })).json()).knobs;
  document.querySelector("#knobs tbody").replaceChildren(
    ...body.map((knob) => {
      const input = el("input", { type: "number", min: String(knob.low), max: String(knob.high), step: "any" });
      input.value = String(knob.value);
      const apply = el("button", { type: "button" }, "적용");
      apply.addEventListener("click", () => turn(knob.setting, Number(input.value)));
      return el(
        "tr",
        { dataset: { setting: knob.setting } },
        el("td", {}, NAMES[knob.setting] || knob.setting),
        el("td", { class: "num now" }, String(knob.value)),
        el("td", {}, input),
        el("td", {}, `${knob.low} – ${knob.high}`),
        el("td", {}, apply),
      );
    }),
  );
}

async function turn(setting, value) {
  const result = document.getElementById("knob-result");
  const response = await fetch(`/api/knobs/${setting}`, {
    method: "PUT",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify({ value }),
  });
  const body = await response.json().catch(() => ({}));
  result.dataset.status = String(response.status);
  result.textContent = response.ok
    ? `${NAMES[setting] || setting} → ${value}: 적용했습니다. 열린 학생 화면에 알림이 갑니다.`
    : `바꾸지 못했습니다 (${response.status}): ${body.detail || ""}`;
  await load();
}

load();
