// The live box panel and the random-weights banner (from /api/model).
// The panel listens on a WebSocket (/api/stats/live pushes the JSON of /api/stats twice a second):
// during a burst the page's requests hold all six of the browser's connections to the box, and a poll
// would queue behind them; a WebSocket is not counted against those six (measured: docs/burst-page.md).
// If the socket fails, the panel polls /api/stats and says so; it always shows how old its values are.
// Everything shown comes from the API; nothing is computed or invented on the page.
"use strict";

(function () {
  const PATH_LABELS = { naive: "① naive", limited: "② limited", batched: "③ batched", tickets: "④ tickets" };
  const POLL_EVERY_MS = 1000;
  const RECONNECT_EVERY_MS = 5000;
  const STALE_AFTER_MS = 2000; // four missed pushes, or two missed polls
  const MIB = 2 ** 20;

  const panel = document.getElementById("box-panel");
  let channel = "connecting"; // "websocket" | "polling" | "connecting"
  let lastAt = null;
  let last = null;
  let socket = null;
  let pollTimer = null;
  const recordings = new Set();

  function setText(id, text) {
    document.getElementById(id).textContent = text;
  }

  function sum(values) {
    return Object.values(values || {}).reduce((a, b) => a + b, 0);
  }

  const mib = (bytes) => `${(bytes / MIB).toFixed(0)} MiB`;
  const incarnation = (stats) => (stats.box && stats.box.incarnation != null ? stats.box.incarnation : null);

  function renderStats(stats) {
    const lane = stats.lane;
    const laneEl = document.getElementById("box-lane");
    laneEl.textContent = lane.busy ? `추론 중 (리뷰 ${lane.current_batch}개)` : "쉬는 중";
    laneEl.className = lane.busy ? "busy" : "idle";
    laneEl.dataset.busy = String(lane.busy);
    setText("box-pending", `${lane.pending_reviews}개`);
    setText("box-service", `리뷰당 ${lane.service_s_per_review.toFixed(2)}초`);
    const limited = stats.paths.limited;
    setText("box-seats", `${limited.seats_taken} / ${limited.capacity} (추론 ${limited.in_flight} + 대기 ${limited.waiting})`);
    const jobs = stats.jobs;
    setText("box-jobs", `대기 ${jobs.queued || 0} · 실행 ${jobs.running || 0} · 완료 ${jobs.done || 0}`);
    const memory = document.getElementById("box-memory");
    memory.dataset.rssBytes = String(stats.process.rss_bytes);
    memory.textContent = mib(stats.process.rss_bytes);
    setText("box-cache", `적중 ${stats.cache.hits} · 미스 ${stats.cache.misses} · ${stats.cache.size}개`);
    // `box` is there once the box (app/box) reports on /api/stats; the panel works without it.
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
        const p = stats.paths[path];
        Object.assign(tr.dataset, { path, inFlight: String(p.in_flight), waiting: String(p.waiting) });
        for (const value of [label, p.in_flight, p.waiting, sum(stats.rejections[path])]) {
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
    for (const recording of recordings) recording.observe(stats, now);
    last = stats;
    lastAt = now;
    renderStats(stats);
    for (const recording of recordings) renderRecording(recording.snapshot());
    showAge();
  }

  // ---------------------------------------------------------------- freshness
  function showAge() {
    const age = lastAt === null ? null : performance.now() - lastAt;
    const stale = age === null || age > STALE_AFTER_MS;
    panel.dataset.channel = channel;
    panel.dataset.stale = String(stale);
    panel.dataset.ageMs = age === null ? "" : age.toFixed(0);
    document.getElementById("box-updated").textContent =
      lastAt === null ? "연결 중…" : stale ? `${(age / 1000).toFixed(0)}초 전 값 (오래됨)` : "실시간";
    const how =
      channel === "websocket"
        ? "WebSocket으로 0.5초마다 받음"
        : channel === "polling"
          ? "WebSocket이 안 되어 1초마다 묻는 중: 발사 중에는 브라우저 연결 6개 뒤에 줄을 섭니다"
          : "연결 중";
    setText("box-age", age === null ? how : `${(age / 1000).toFixed(1)}초 전 값 · ${how}`);
  }
  setInterval(showAge, 250);

  // ---------------------------------------------------------------- channels
  function openSocket() {
    let opened = false;
    const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/api/stats/live`;
    try {
      socket = new WebSocket(url);
    } catch {
      startPolling();
      return;
    }
    socket.addEventListener("open", () => {
      opened = true;
      stopPolling();
    });
    socket.addEventListener("message", (event) => received(JSON.parse(event.data), "websocket"));
    socket.addEventListener("close", () => {
      socket = null;
      for (const recording of recordings) recording.lost = true;
      if (opened) channel = "polling";
      startPolling();
      setTimeout(openSocket, RECONNECT_EVERY_MS);
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
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const stats = await response.json();
      if (pollTimer !== null) received(stats, "polling");
    } catch (err) {
      setText("box-updated", `연결 끊김 (${err.message})`);
    }
    if (pollTimer !== null) pollTimer = setTimeout(poll, POLL_EVERY_MS);
  }

  // ---------------------------------------------------------------- per-burst records
  /**
   * What the panel saw during one burst: peak RSS (and RSS before), the peak waiting and in-flight
   * count per path, whether the lane was ever busy, the longest gap between updates, and whether the
   * box restarted (its incarnation changed; null when /api/stats does not say).
   */
  class Recording {
    constructor() {
      this.startedAt = performance.now();
      this.lastSeenAt = lastAt;
      this.maxGapMs = 0;
      this.updates = 0;
      this.lost = false;
      this.before = last;
      this.peakRss = last ? last.process.rss_bytes : null;
      this.peakWaiting = {};
      this.peakInFlight = {};
      this.laneBusy = false;
      this.channels = new Set();
    }

    observe(stats, now) {
      this.maxGapMs = Math.max(this.maxGapMs, now - Math.max(this.startedAt, this.lastSeenAt ?? this.startedAt));
      this.lastSeenAt = now;
      this.updates += 1;
      this.channels.add(channel);
      this.after = stats;
      this.peakRss = Math.max(this.peakRss ?? 0, stats.process.rss_bytes);
      this.laneBusy = this.laneBusy || stats.lane.busy;
      for (const [path, p] of Object.entries(stats.paths)) {
        this.peakWaiting[path] = Math.max(this.peakWaiting[path] || 0, p.waiting);
        this.peakInFlight[path] = Math.max(this.peakInFlight[path] || 0, p.in_flight);
      }
    }

    snapshot() {
      const now = performance.now();
      const gap = now - Math.max(this.startedAt, this.lastSeenAt ?? this.startedAt);
      const first = this.before ? incarnation(this.before) : null;
      const latest = this.after ? incarnation(this.after) : null;
      return {
        updates: this.updates,
        maxGapMs: Math.round(Math.max(this.maxGapMs, gap)),
        channel: [...this.channels].join("+") || channel,
        lostSocket: this.lost,
        rssBeforeBytes: this.before ? this.before.process.rss_bytes : null,
        peakRssBytes: this.peakRss,
        peakWaiting: { ...this.peakWaiting },
        peakInFlight: { ...this.peakInFlight },
        laneBusy: this.laneBusy,
        boxDied: first === null || latest === null ? null : latest !== first,
        lastDeath: this.after && this.after.box ? this.after.box.last_death ?? null : null,
      };
    }
  }

  /** One line for a burst's record, in Korean; shared with the comparison cards. */
  function describeRecording(r) {
    if (!r) return "";
    const parts = [];
    if (r.peakRssBytes != null) {
      const delta = r.rssBeforeBytes != null ? r.peakRssBytes - r.rssBeforeBytes : null;
      const sign = delta != null && delta >= 0 ? "+" : "";
      parts.push(`최대 RSS ${mib(r.peakRssBytes)}${delta != null ? ` (발사 전보다 ${sign}${(delta / MIB).toFixed(0)})` : ""}`);
    }
    const waiting = Object.entries(PATH_LABELS)
      .filter(([path]) => r.peakWaiting[path] > 0)
      .map(([path, label]) => `${label.split(" ")[0]} ${r.peakWaiting[path]}`);
    parts.push(`서버 최대 대기 ${waiting.length ? waiting.join(" · ") : "0"}`);
    // Only when /api/stats reports the box's incarnation; otherwise a restart cannot be told from here.
    if (r.boxDied !== null) parts.push(r.boxDied ? "⚠ 상자가 죽었다 다시 떴습니다" : "상자 살아 있음");
    if (r.lostSocket) parts.push("발사 중 WebSocket이 끊김");
    parts.push(`패널 갱신 ${r.updates}번, 최대 간격 ${(r.maxGapMs / 1000).toFixed(1)}초`);
    return parts.join(" · ");
  }

  function renderRecording(snapshot) {
    const line = document.getElementById("box-burst");
    line.hidden = false;
    line.textContent = `이번 발사: ${describeRecording(snapshot)}`;
    line.dataset.record = JSON.stringify(snapshot);
  }

  /** burst.js calls record() when a burst starts and stop() on the result when it ends. */
  function record() {
    const recording = new Recording();
    recordings.add(recording);
    renderRecording(recording.snapshot());
    return {
      stop() {
        recordings.delete(recording);
        const snapshot = recording.snapshot();
        renderRecording(snapshot);
        document.getElementById("box-burst").textContent = `마지막 발사: ${describeRecording(snapshot)}`;
        return snapshot;
      },
    };
  }

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
      const extra = model.box ? ` · ${boxLine(model.box)}` : "";
      setText("box-model", `모델: ${model.name} (${model.weights}) · 스레드 ${model.intra_op_threads}개${extra}`);
      if (model.random_weights) {
        document.getElementById("weights-banner").hidden = false;
        setText("weights-detail", `지금 모델: ${model.name}`);
      }
    } catch (err) {
      setText("box-model", `모델 정보를 읽지 못했습니다: ${err.message}`);
    }
  }

  window.boxPanel = { record, describeRecording };
  showModel();
  openSocket();
})();
