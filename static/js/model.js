// The model line under the panel and the random-weights banner, from GET /api/model.
import { el } from "./dom.js";

function setText(id, text) {
  document.getElementById(id).textContent = text;
}

/** How the box holds a limit (/api/model's `cpu_mode`, `memory_mode`: English records) in the page's words. */
const MODES = { cgroup: "cgroup", affinity: "CPU affinity", watchdog: "감시견이 지킴" };
const modeWords = (mode) => MODES[mode] ?? (mode.startsWith("not enforced") ? "지키지 않음" : mode);

/** The served model in Korean: its name without the manifest's English note in brackets, and its weights. */
function modelWords(model) {
  const name = model.name.replace(/\s*\([^)]*\)\s*$/, "");
  const twin = /\boffline twin\b/.test(model.name) ? "오프라인 쌍둥이, " : "";
  return model.random_weights ? `${name} (${twin}무작위 가중치)` : name;
}

/** The box's CPU, speed and memory limits as /api/model reports them (app/box), in one Korean line. The
 * target and the cap are data-limit spans: the instructor may turn them, and knobs.js writes the live values. */
function boxLine(box) {
  const cpus = box.cpus.length ? `CPU ${box.cpus.length}개 (${modeWords(box.cpu_mode)})` : "CPU 제한 없음";
  // The speed changes as the loop holds it: the panel's 리뷰 속도 line shows it live, never a start-up figure.
  const speed = box.speed
    ? ["리뷰당 목표 ", el("span", { dataset: { limit: "box_target_s" } }, String(box.speed.target_s)), "초 (위 리뷰 속도 줄에 실시간)"]
    : ["이 컴퓨터 속도 그대로"];
  const held = box.stand_in ? `, 그중 ${Math.round(box.stand_in.bytes / 2 ** 20)} MiB는 ① 서버의 라이브러리 몫으로 잡아 둠(대역)` : "";
  const memory = box.memory_cap_bytes
    ? ["메모리 상한 ", el("span", { dataset: { limit: "memory_cap_mib" } }, String(Math.round(box.memory_cap_bytes / 2 ** 20))), ` MiB (${modeWords(box.memory_mode)}${held})`]
    : ["메모리 상한 없음"];
  return ["상자: ", cpus, " · ", ...speed, " · ", ...memory];
}

/** One shape in Korean: pairs per model call (0: the whole batch in one call), sorted by length or not. */
function shapeText(shape) {
  const size = shape.chunk ? `${shape.chunk}쌍씩` : "배치 전체를 한 번에";
  return shape.sort ? `${size} (길이순)` : size;
}

const SHAPE_SOURCE = { measured: "이 컴퓨터에서 방금 측정", cached: "이 컴퓨터에서 측정해 둔 값", LAB_PAIR_CHUNK: "LAB_PAIR_CHUNK로 지정" };

/** Which call shape the server chose and why (app/engine/callshape.py); the measured table in the tooltip. */
function shapeLine(callShape) {
  const line = `모델 호출: 리뷰 하나는 ${shapeText(callShape.one_review_shape)}, 배치는 ${shapeText(callShape.batch_shape)} · ${SHAPE_SOURCE[callShape.source] || callShape.source}`;
  const rows = callShape.trials.map((t) => `${t.workload === "one review" ? "리뷰 하나" : "8개 배치"} · ${shapeText(t)}: 리뷰당 ${t.seconds_per_review.toFixed(3)} CPU초`);
  return { line, why: rows.length ? `가장 빠른 모양을 골랐습니다.\n${rows.join("\n")}` : "" };
}

/** Says which model answers, and shows the banner when its weights are random (the offline twin). */
export async function showModel() {
  try {
    const response = await fetch("/api/model", { cache: "no-store" });
    const model = await response.json();
    const extra = model.box ? [" · ", ...boxLine(model.box)] : [];
    document.getElementById("box-model").replaceChildren(`모델: ${modelWords(model)} · 스레드 ${model.intra_op_threads}개`, ...extra);
    if (model.call_shape) {
      const shape = shapeLine(model.call_shape);
      setText("call-shape", shape.line);
      document.getElementById("call-shape").title = shape.why;
    }
    if (model.random_weights) {
      document.getElementById("weights-banner").hidden = false;
      setText("weights-detail", `지금 모델: ${model.name}`);
    }
  } catch (err) {
    setText("box-model", `모델 정보를 읽지 못했습니다: ${err.message}`);
  }
}
