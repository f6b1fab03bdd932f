// ③'s note: "where does batching pay?" Two curves measured on this host's core (static/batching-curve.json,
// `python -m bench.batching`), drawn at the box's speed, and the student's own ③ batches on the twin's axes.
import { atBoxSpeed, batches, boxScale, perReviewChange, studentBatches } from "./batchdata.js";
import { drawPanel, seconds } from "./batchplot.js";

const MODELS = {
  twin: { title: "트윈 모델 (상자가 쓰는 모델)", short: "트윈", topic: "트윈은", color: "#2b6cb0" },
  tiny: { title: "작은 시험 모델 (층 2개, 폭 64)", short: "작은 모델", topic: "작은 모델은", color: "#2f855a" },
};
const state = { data: null, speed: null, burst: null };

function figure() {
  return document.getElementById("batching-curve");
}

function setText(selector, text) {
  figure().querySelector(selector).textContent = text;
}

function served(data) {
  // The served shape of each model: one panel each (a padded twin curve, if measured, stays in the docs).
  return Object.keys(MODELS).map((model) => data.curves.find((c) => c.model === model && c.chunk_pairs > 0)).filter(Boolean);
}

function verdict(change) {
  const saved = -change.pct;
  if (saved >= 30) return "묶음이 이득";
  if (saved >= 10) return "조금 이득";
  return "거의 이득 없음";
}

/** The figure's answer, from the measured fits: how a compares with b, and what a batch of 8 saved. */
function answer(rows) {
  const parts = rows.map(({ topic, fit, change }) => {
    const ratio = fit.a === 0 ? "a가 0" : fit.b > 0 ? `a가 b의 ${(fit.a / fit.b).toFixed(2)}배` : "b가 0";
    const saved = change.pct <= 0 ? `${(-change.pct).toFixed(0)}% 절약` : `${change.pct.toFixed(0)}% 더 듦`;
    return `${topic} ${ratio}, ${change.n}개 묶음이면 리뷰당 ${saved}`;
  });
  const pays = rows.filter((r) => -r.change.pct >= 30).map((r) => r.short);
  const tail = pays.length
    ? `묶음이 크게 이득인 곳: ${pays.join(", ")}.`
    : "이 코어에서는 어느 쪽도 a가 b보다 크지 않아, 묶음이 크게 이득인 곳을 찾지 못했습니다.";
  return `답 (이 코어에서 잰 값): ${parts.join("; ")}. ${tail}`;
}

function render() {
  const { data, speed } = state;
  if (!data) return;
  const scale = boxScale(data.reference, speed);
  const { points: student, partial } = studentBatches(state.burst);
  const plots = figure().querySelector(".curve-plots");
  const legend = figure().querySelector(".curve-legend");
  plots.replaceChildren();
  legend.replaceChildren();
  const rows = [];
  for (const curve of served(data)) {
    const model = MODELS[curve.model];
    const box = atBoxSpeed(curve, scale.factor);
    plots.append(drawPanel({ model: curve.model, title: model.title, color: model.color, ...box, student: curve.model === "twin" ? student : [] }));
    const change = perReviewChange(box.points);
    rows.push({ short: model.short, topic: model.topic, fit: box.fit, change });
    const item = document.createElement("li");
    item.style.color = model.color;
    item.dataset.model = curve.model;
    item.textContent = `${model.title}: 한 번 ≈ a + b·n = ${seconds(box.fit.a)} + ${seconds(box.fit.b)}·n — ` +
      `${change.n}개를 한 번에 보내면 리뷰당 ${seconds(change.perReview)}, 하나씩(${seconds(change.alone)})보다 ` +
      `${Math.abs(change.pct).toFixed(0)}% ${change.pct <= 0 ? "적음" : "많음"}: ${verdict(change)}.`;
    legend.append(item);
  }
  setText(".curve-answer", answer(rows));
  const reference = seconds(data.reference.seconds);
  setText(".curve-scale small", scale.boxSeconds === null
    ? "이 서버는 상자처럼 느려지지 않으므로 측정값을 그대로 그렸습니다 (×1)."
    : `상자 속도로 환산: 중간 길이 리뷰 하나가 이 측정에서 ${reference}, 상자에서 ${seconds(scale.boxSeconds)}` +
      `(${scale.measured ? "최근 1분 동안 잰 중간값" : "목표값"})이므로 측정값을 모두 ×${Number(scale.factor.toPrecision(3))} 했습니다. ` +
      "상자는 코어를 쓰는 몫을 줄여 느려지므로 두 모델 모두 같은 비율로 느려진다고 본 값이며, 상자 안에서 직접 잰 값은 아닙니다.");
  const batches = student.reduce((sum, p) => sum + p.count, 0);
  const shared = partial ? ` 다른 손님과 섞여 끝까지 보지 못한 묶음 ${partial}개는 찍지 않았습니다.` : "";
  setText(".curve-student small", student.length || partial
    ? `빨간 네모: 내 ③ 발사의 묶음 ${batches}개 (묶음 크기와, 묶음의 마지막 답까지 상자에서 잰 추론 시간).${shared}`
    : "③으로 발사하면 내 묶음(묶음 크기와 마지막 답까지 잰 추론 시간)이 트윈 그림에 빨간 네모로 찍힙니다.");
  const load = data.load;
  setText(".curve-measured small", `측정: ${data.date} ${data.time_utc} UTC, ${data.host_ko}, 코어 ${data.core}번 하나에 고정, ` +
    `추론 스레드 1개, 부하 평균 시작 ${load.start.map((v) => v.toFixed(1)).join("/")} · 끝 ${load.end.map((v) => v.toFixed(1)).join("/")}` +
    "(1·5·15분). 같은 리뷰 8개로 묶음 크기만 바꾸어 크기마다 8번 잰 평균입니다.");
  figure().dataset.state = "drawn";
  figure().dataset.studentBatches = String(student.length);
}

/** Loads the committed curves and the box's speed, then draws; on failure says so in Korean. */
export async function showBatchingFigure() {
  if (!figure()) return;
  try {
    const [curves, model] = await Promise.all([
      fetch("/static/batching-curve.json").then((r) => (r.ok ? r.json() : Promise.reject(new Error(String(r.status))))),
      fetch("/api/model", { cache: "no-store" }).then((r) => (r.ok ? r.json() : null)).catch(() => null),
    ]);
    state.data = curves;
    state.speed = model && model.box ? model.box.speed : null;
    render();
  } catch {
    setText(".curve-measured small", "측정값을 불러오지 못했습니다.");
    figure().dataset.state = "failed";
  }
}

/** Puts a ③ burst's batches on the twin's axes once it has ended (any other burst, or none, clears them);
 *  the box's speed is read again then, since the scale follows it. */
export function showStudentBatches(burst) {
  const shown = batches(burst) && !burst.running ? burst : null;
  if (shown === state.burst) return;
  state.burst = shown;
  render();
  if (shown) refreshSpeed();
}

async function refreshSpeed() {
  try {
    const model = await (await fetch("/api/model", { cache: "no-store" })).json();
    state.speed = model.box ? model.box.speed : null;
    render();
  } catch {
    // keep the last speed: the figure says which one it used
  }
}
