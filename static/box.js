// The live box panel (from /api/stats, about once a second) and the random-weights banner (from /api/model).
// Everything shown here comes from the API; nothing is computed or invented on the page.
"use strict";

(function () {
  const PATH_LABELS = { naive: "① naive", limited: "② limited", batched: "③ batched", tickets: "④ tickets" };
  const STATS_EVERY_MS = 1000;
  let lastStatsAt = null;

  function setText(id, text) {
    document.getElementById(id).textContent = text;
  }

  function sum(values) {
    return Object.values(values || {}).reduce((a, b) => a + b, 0);
  }

  function renderStats(stats) {
    const lane = stats.lane;
    const laneEl = document.getElementById("box-lane");
    laneEl.textContent = lane.busy ? `추론 중 (리뷰 ${lane.current_batch}개)` : "쉬는 중";
    laneEl.className = lane.busy ? "busy" : "idle";
    setText("box-pending", `${lane.pending_reviews}개`);
    setText("box-service", `리뷰당 ${lane.service_s_per_review.toFixed(2)}초`);
    const limited = stats.paths.limited;
    setText("box-seats", `${limited.seats_taken} / ${limited.capacity} (추론 ${limited.in_flight} + 대기 ${limited.waiting})`);
    const jobs = stats.jobs;
    setText("box-jobs", `대기 ${jobs.queued || 0} · 실행 ${jobs.running || 0} · 완료 ${jobs.done || 0}`);
    setText("box-memory", `${(stats.process.rss_bytes / 2 ** 20).toFixed(0)} MiB`);
    setText("box-cache", `적중 ${stats.cache.hits} · 미스 ${stats.cache.misses} · ${stats.cache.size}개`);
    const box = stats.box;
    if (box && box.last_death) {
      const cause = box.last_death.cause === "memory_cap" ? "메모리 상한" : box.last_death.cause;
      setText("box-death", `상자가 죽었습니다 (${cause}) → 다시 살아남 (${box.incarnation}번째)`);
      document.getElementById("box-death").hidden = false;
    }
    // burst.js relabels rows whose connection the dead box took with it.
    if (box && window.labBoxDeaths !== undefined && box.deaths > window.labBoxDeaths) {
      window.labBoxDeaths = box.deaths;
      document.dispatchEvent(new Event("lab:box-died"));
    }
    if (box) window.labBoxDeaths = box.deaths;
    const body = document.getElementById("box-paths");
    body.replaceChildren(
      ...Object.entries(PATH_LABELS).map(([path, label]) => {
        const tr = document.createElement("tr");
        tr.dataset.path = path;
        const p = stats.paths[path];
        for (const value of [label, p.in_flight, p.waiting, sum(stats.rejections[path])]) {
          const td = document.createElement("td");
          td.textContent = String(value);
          tr.append(td);
        }
        return tr;
      }),
    );
  }

  async function pollStats() {
    try {
      // High priority: during a burst the six connections are busy, and this should take the next free one.
      const response = await fetch("/api/stats", { cache: "no-store", priority: "high" });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      renderStats(await response.json());
      lastStatsAt = performance.now();
      setText("box-updated", "실시간");
    } catch (err) {
      setText("box-updated", `연결 끊김 (${err.message})`);
    }
    setTimeout(pollStats, STATS_EVERY_MS);
  }

  // A stale panel is itself a lesson (the browser's six connections were all busy), so say so.
  setInterval(() => {
    if (lastStatsAt !== null && performance.now() - lastStatsAt > 2.5 * STATS_EVERY_MS) {
      const age = ((performance.now() - lastStatsAt) / 1000).toFixed(0);
      setText("box-updated", `${age}초 전 (브라우저 연결이 모두 사용 중)`);
    }
  }, 500);

  function boxLine(box) {
    const c = box.calibration;
    const cpus = box.cpus.length ? `CPU ${box.cpus.length}개 (${box.cpu_mode})` : `CPU 제한 없음 (${box.cpu_mode})`;
    const speed = c ? `리뷰당 목표 ${c.target_s}초, 실제 ${c.achieved_s}초 (이 컴퓨터 ${c.host_cpu_s}초, ${c.method})` : "이 컴퓨터 속도 그대로";
    const memory = box.memory_cap_bytes ? `메모리 상한 ${(box.memory_cap_bytes / 2 ** 30).toFixed(1)} GiB (${box.memory_mode})` : "메모리 상한 없음";
    return `상자: ${cpus} · ${speed} · ${memory}`;
  }

  async function showModel() {
    try {
      const response = await fetch("/api/model", { cache: "no-store" });
      const model = await response.json();
      setText("box-model", `모델: ${model.name} (${model.weights}) · 스레드 ${model.intra_op_threads}개 · ${boxLine(model.box)}`);
      if (model.random_weights) {
        document.getElementById("weights-banner").hidden = false;
        setText("weights-detail", `(지금 모델: ${model.name})`);
      }
    } catch (err) {
      setText("box-model", `모델 정보를 읽지 못했습니다: ${err.message}`);
    }
  }

  showModel();
  pollStats();
})();
