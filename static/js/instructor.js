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
  box_seconds_per_review: "상자: 리뷰당 목표 (초)",
  memory_cap_bytes: "상자: 메모리 상한 (MiB)",
};
// Knobs kept in bytes are shown and typed in MiB; the API speaks bytes.
const MIB = 2 ** 20;
const shown = (knob, v) => (knob.unit === "bytes" ? Math.round(v / MIB) : v);
const sent = (knob, v) => (knob.unit === "bytes" ? Math.round(v * MIB) : v);
const token = new URLSearchParams(location.search).get("token") || "";

async function load() {
  const body = (await (await fetch("/api/knobs", { cache: "no-store" })).json()).knobs;
  document.querySelector("#knobs tbody").replaceChildren(
    ...body.map((knob) => {
      const low = shown(knob, knob.low);
      const high = shown(knob, knob.high);
      const input = el("input", { type: "number", min: String(low), max: String(high), step: "any" });
      input.value = String(shown(knob, knob.value));
      const apply = el("button", { type: "button" }, "적용");
      apply.addEventListener("click", () => turn(knob, Number(input.value)));
      return el(
        "tr",
        { dataset: { setting: knob.setting } },
        el("td", {}, NAMES[knob.setting] || knob.setting),
        el("td", { class: "num now" }, String(shown(knob, knob.value))),
        el("td", {}, input),
        el("td", {}, `${low} – ${high}`),
        el("td", {}, apply),
      );
    }),
  );
}

async function turn(knob, value) {
  const result = document.getElementById("knob-result");
  const response = await fetch(`/api/knobs/${knob.setting}`, {
    method: "PUT",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
    body: JSON.stringify({ value: sent(knob, value) }),
  });
  const body = await response.json().catch(() => ({}));
  result.dataset.status = String(response.status);
  const name = NAMES[knob.setting] || knob.setting;
  result.textContent = response.ok
    ? `${name} → ${value}: 적용했습니다. 열린 학생 화면에 알림이 갑니다.`
    : `바꾸지 못했습니다 (${response.status}): ${body.detail || ""}`;
  await load();
}

load();
