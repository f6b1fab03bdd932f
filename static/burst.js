// The burst page: fire N reviews at one path at once, draw one timing bar per request from what the
// server says (Server-Timing) and what the browser measured (round trip, time queued in the browser),
// and keep the last burst of each path, review mode and size so they can be compared without firing again.
"use strict";

(function () {
  const PATHS = {
    naive: { label: "① naive", url: "/api/naive/predict" },
    limited: { label: "② limited", url: "/api/limited/predict" },
    batched: { label: "③ batched", url: "/api/batched/predict" },
    tickets: { label: "④ tickets", url: "/api/queue/jobs" },
  };
  const STORE_KEY = "review-lab.last-bursts.v2"; // v1 kept one burst per path, whatever its mode and size
  const OLD_STORE_KEY = "review-lab.last-bursts.v1";
  const MAX_SAVED = 12; // the oldest saved bursts beyond this are forgotten
  const MODES = { distinct: "서로 다른 리뷰", repeat: "같은 리뷰 반복" };
  const MAX_BURST = 50;
  // Used only if /api/samples cannot be read; the box normally supplies its own 60 reviews.
  const FALLBACK_SAMPLES = [
    "빵이 맛있어요!", "커피가 너무 써요..", "사장님 친절하세요", "주차가 불편해요ㅠ",
    "가격이 좀 비싸요", "매장 깨끗하고 좋아요", "줄이 너무 길어요", "포장이 꼼꼼해요",
  ];

  // ---------------------------------------------------------------- measuring
  // Each burst fetch has a unique URL (?burst=…&i=…), so its PerformanceResourceTiming entry can be
  // found again: requestStart - startTime is the time the request sat inside the browser (waiting for
  // one of the six connections, plus connection setup) before a byte went to the server.
  const timingWaiters = new Map();
  const timingEarly = new Map();
  performance.setResourceTimingBufferSize(2000);
  performance.addEventListener("resourcetimingbufferfull", () => performance.clearResourceTimings());
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const resolve = timingWaiters.get(entry.name);
      if (resolve) {
        timingWaiters.delete(entry.name);
        resolve(entry);
      } else if (entry.name.includes("burst=")) {
        timingEarly.set(entry.name, entry);
      }
    }
  }).observe({ type: "resource" });

  function resourceTiming(url, limitMs = 3000) {
    const early = timingEarly.get(url);
    if (early) {
      timingEarly.delete(url);
      return Promise.resolve(early);
    }
    return new Promise((resolve) => {
      timingWaiters.set(url, resolve);
      setTimeout(() => {
        if (timingWaiters.delete(url)) resolve(null);
      }, limitMs);
    });
  }

  /** `wait;dur=12.5, infer;dur=980.1` → {wait: 12.5, infer: 980.1} (milliseconds); null if absent. */
  function parseServerTiming(header) {
    if (!header) return null;
    const timing = {};
    for (const metric of header.split(",")) {
      const [name, ...params] = metric.trim().split(";");
      const dur = params.map((p) => p.trim()).find((p) => p.startsWith("dur="));
      if (name && dur) timing[name.trim()] = Number(dur.slice(4));
    }
    return timing;
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

  const TERMINAL = new Set(["done", "failed", "expired", "canceled"]);

  /**
   * A ticket's JSON (from a GET or an event) as onUpdate gets it, plus `timing`: the parsed
   * Server-Timing header if there is one, else the same numbers from the body (events have no headers).
   */
  function withTiming(job, serverTiming = null) {
    const fromBody =
      job.status === "done" && job.waited_ms != null ? { wait: job.waited_ms, infer: job.inference_ms ?? 0 } : null;
    return { ...job, timing: parseServerTiming(serverTiming) || fromBody };
  }

  /**
   * Follow one ticket by polling GET /api/queue/jobs/{id} until it ends, calling onUpdate(job) with
   * every new state; resolves with the last one. Only the fallback: a burst follows all its tickets
   * over one stream (followTickets), and polls only if that stream fails (e.g. a proxy that buffers it).
   */
  async function followTicket(id, onUpdate) {
    let failures = 0;
    for (;;) {
      let job;
      try {
        const response = await fetch(`/api/queue/jobs/${encodeURIComponent(id)}`, { cache: "no-store" });
        const body = await response.json();
        if (!response.ok) return { job_id: id, status: "failed", error: body.error || `HTTP ${response.status}` };
        job = withTiming(body, response.headers.get("Server-Timing"));
        failures = 0;
      } catch (err) {
        if (++failures >= 5) return { job_id: id, status: "failed", error: String(err) };
        await sleep(500);
        continue;
      }
      onUpdate(job);
      if (TERMINAL.has(job.status)) return job;
      // Ask often when the ETA is near, seldom when it is far: every poll costs the box a little CPU.
      await sleep(Math.min(1000, Math.max(250, (job.eta_seconds ?? 0.5) * 500)));
    }
  }

  /**
   * Follow many tickets over ONE EventSource (GET /api/queue/events?job_id=…): a browser has six
   * connections per host, and a stream per ticket would hold them all for the whole burst.
   * `followers` maps job id → {onUpdate, resolve}; each is resolved with its job's last state.
   * If the stream fails for good, the tickets still open fall back to polling (followTicket).
   */
  function followTickets(followers) {
    const open = new Map(followers);
    const query = [...open.keys()].map((id) => `job_id=${encodeURIComponent(id)}`).join("&");
    const source = new EventSource(`/api/queue/events?${query}`);
    let failures = 0;
    const finish = (id, job) => {
      const follower = open.get(id);
      if (!follower) return;
      open.delete(id);
      follower.resolve(job);
      if (!open.size) source.close(); // before the server ends the stream, so the browser never reconnects
    };
    source.addEventListener("status", (event) => {
      failures = 0;
      const job = withTiming(JSON.parse(event.data));
      const follower = open.get(job.job_id);
      if (!follower) return;
      follower.onUpdate(job);
      if (TERMINAL.has(job.status)) finish(job.job_id, job);
    });
    source.addEventListener("missing", (event) => {
      const gone = JSON.parse(event.data);
      finish(gone.job_id, { job_id: gone.job_id, status: "failed", error: gone.error });
    });
    source.addEventListener("error", () => {
      // While CONNECTING the browser retries by itself, and the server then sends every job's state again.
      if (source.readyState !== EventSource.CLOSED && ++failures < 3) return;
      source.close();
      for (const [id, { onUpdate, resolve }] of open) followTicket(id, onUpdate).then(resolve);
      open.clear();
    });
  }

  /**
   * A burst's tickets, gathered as their 202s arrive; once every request of the burst has answered,
   * all of them are followed over one stream. Each row calls follow() or skip() exactly once.
   */
  function ticketGathering(expected) {
    const followers = new Map();
    let answered = 0;
    const answer = () => {
      if (++answered === expected && followers.size) followTickets(followers);
    };
    return {
      follow: (id, onUpdate) =>
        new Promise((resolve) => {
          followers.set(id, { onUpdate, resolve });
          answer();
        }),
      skip: answer,
    };
  }

  /**
   * One request of a burst; fills `row` as answers arrive and calls `changed()` after each step.
   * On ④, `tickets` (a ticketGathering) follows the ticket together with the rest of the burst.
   */
  async function fireOne(path, row, burstTag, t0, changed, tickets) {
    const url = new URL(`${PATHS[path].url}?burst=${burstTag}&i=${row.index}`, location.href).href;
    const started = performance.now();
    row.startMs = started - t0;
    row.boxDeaths = window.labBoxDeaths || 0;
    let response;
    let body = null;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ text: row.text }),
        cache: "no-store",
      });
      body = await response.json().catch(() => null);
    } catch (err) {
      if (tickets) tickets.skip();
      row.state = "done";
      row.status = null;
      row.error = String(err);
      row.totalMs = performance.now() - started;
      row.endMs = row.startMs + row.totalMs;
      changed();
      return;
    }
    row.roundTripMs = performance.now() - started;
    const entry = await resourceTiming(url);
    row.browserMs = entry && entry.requestStart > 0 ? Math.max(0, entry.requestStart - entry.startTime) : null;
    row.status = response.status;
    row.retryAfter = response.headers.get("Retry-After");
    row.cache = response.headers.get("X-Cache");
    const batch = response.headers.get("X-Batch-Size");
    row.batchSize = batch === null ? null : Number(batch);
    row.error = body && body.error ? body.error : null;
    applyTiming(row, parseServerTiming(response.headers.get("Server-Timing")));
    if (body && body.top) row.top = body.top.label;

    if (path === "tickets" && response.status === 202 && body) {
      row.state = "ticket";
      row.ticket = {
        id: body.job_id,
        etaS: body.eta_seconds,
        position: body.position,
        jobStatus: body.status,
        turnaroundMs: row.roundTripMs,
      };
      changed();
      let final;
      if (TERMINAL.has(body.status)) {
        tickets.skip(); // answered from the cache: nothing to follow
        final = withTiming(body, response.headers.get("Server-Timing"));
      } else {
        final = await tickets.follow(body.job_id, (job) => {
          row.ticket.jobStatus = job.status;
          row.ticket.position = job.position;
          row.ticket.liveEtaS = job.eta_seconds;
          changed();
        });
      }
      row.ticket.jobStatus = final.status;
      row.error = final.error || null;
      applyTiming(row, final.timing);
      if (final.waited_ms != null) row.ticket.actualS = (final.waited_ms + (final.inference_ms || 0)) / 1000;
      if (final.result && final.result.topics.length) row.top = final.result.topics[0].label;
    } else if (tickets) {
      tickets.skip();
    }
    row.totalMs = performance.now() - started;
    row.endMs = row.startMs + row.totalMs;
    row.state = "done";
    changed();
  }

  function applyTiming(row, timing) {
    if (!timing) return;
    if (timing.wait !== undefined) row.waitMs = timing.wait;
    if (timing.infer !== undefined) row.inferMs = timing.infer;
  }

  // ---------------------------------------------------------------- summarising
  function quantile(sorted, q) {
    if (!sorted.length) return null;
    return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  }

  function isServed(row) {
    return row.ticket ? row.ticket.jobStatus === "done" : row.status === 200;
  }

  /** Counts by status, p50/p95 of the served requests' time to an answer, throughput, mean batch. */
  function summarize(burst) {
    const counts = {};
    for (const row of burst.rows) {
      const key = row.status === null || row.status === undefined ? "오류" : String(row.status);
      counts[key] = (counts[key] || 0) + 1;
    }
    const served = burst.rows.filter(isServed);
    const totals = served.map((r) => r.totalMs).sort((a, b) => a - b);
    const durationMs = Math.max(0, ...burst.rows.map((r) => r.endMs || 0));
    const batches = burst.rows.filter((r) => r.batchSize).map((r) => r.batchSize);
    const inferred = served.filter((r) => r.cache !== "hit" && !(r.ticket && r.inferMs === 0));
    const etaRows = burst.rows.filter((r) => r.ticket && r.ticket.actualS != null && r.ticket.etaS != null);
    return {
      counts,
      served: served.length,
      size: burst.rows.length,
      p50Ms: quantile(totals, 0.5),
      p95Ms: quantile(totals, 0.95),
      durationMs,
      throughput: durationMs > 0 ? served.length / (durationMs / 1000) : null,
      meanBatch: batches.length ? batches.reduce((a, b) => a + b, 0) / batches.length : inferred.length ? 1 : null,
      cacheHits: burst.rows.filter((r) => r.cache === "hit").length,
      etaLateS: etaRows.length
        ? etaRows.reduce((a, r) => a + (r.ticket.actualS - r.ticket.etaS), 0) / etaRows.length
        : null,
    };
  }

  // ---------------------------------------------------------------- drawing
  function fmtMs(ms) {
    if (ms === null || ms === undefined || Number.isNaN(ms)) return "–";
    return ms < 1000 ? `${Math.round(ms)}ms` : `${(ms / 1000).toFixed(2)}초`;
  }

  function el(tag, attrs = {}, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs)) {
      if (key === "class") node.className = value;
      else if (key === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(key, value);
    }
    node.append(...children.filter((c) => c !== null && c !== undefined));
    return node;
  }

  /** Bar segments in drawing order, in milliseconds; what is not accounted for is "other". */
  function segments(row) {
    const browser = row.browserMs || 0;
    const wait = row.waitMs || 0;
    const infer = row.inferMs || 0;
    let ticket = row.ticket ? Math.max(0, row.ticket.turnaroundMs - browser) : 0;
    // A job starts waiting the moment the server queues it, while its 202 is still on the way back:
    // the two overlap, so the ticket segment keeps only what the server's wait does not already cover.
    if (row.ticket && row.state === "done") {
      ticket = Math.min(ticket, Math.max(0, row.totalMs - browser - wait - infer));
    }
    const known = browser + ticket + wait + infer;
    const total = row.state === "done" ? row.totalMs : known;
    return [
      ["browser", browser],
      ["ticket", ticket],
      ["wait", wait],
      ["infer", infer],
      ["other", Math.max(0, total - known)],
    ];
  }

  function barFor(row, scaleMs) {
    const track = el("div", { class: "track" });
    if (scaleMs > 0) {
      for (const [kind, ms] of segments(row)) {
        if (ms <= 0) continue;
        const seg = el("span", { class: `seg seg-${kind}`, title: `${kind} ${fmtMs(ms)}` });
        seg.dataset.ms = ms.toFixed(1);
        seg.style.width = `${((ms / scaleMs) * 100).toFixed(4)}%`;
        track.append(seg);
      }
    }
    return track;
  }

  function statusCell(row) {
    if (row.state === "sent") return el("td", { class: "status" }, "보냄…");
    if (row.status === null) {
      const died = (window.labBoxDeaths || 0) > row.boxDeaths;
      return el("td", { class: "status err", title: row.error }, died ? "상자가 죽어 연결이 끊김" : "연결 오류");
    }
    const cls = `status s${String(row.status)[0]}`;
    let detail = "";
    if (row.retryAfter) detail = `${row.retryAfter}초 뒤 다시`;
    if (row.error && row.status >= 400) detail = `${row.error}${detail ? " · " + detail : ""}`;
    if (row.ticket) detail = ticketDetail(row);
    const cell = el("td", { class: cls }, String(row.status));
    if (detail) cell.append(el("span", { class: "detail" }, detail));
    if (row.cache === "hit") cell.append(el("span", { class: "badge" }, "캐시"));
    if (row.batchSize) cell.append(el("span", { class: "badge" }, `묶음 ${row.batchSize}`));
    return cell;
  }

  function ticketDetail(row) {
    const t = row.ticket;
    const promised = t.etaS != null ? `약속 ${t.etaS.toFixed(1)}초` : "";
    if (t.jobStatus === "queued") {
      const eta = t.liveEtaS != null ? t.liveEtaS : t.etaS;
      return `대기 · 앞에 ${t.position ?? "?"}개 · 예상 ${eta != null ? eta.toFixed(1) : "?"}초`;
    }
    if (t.jobStatus === "running") return "추론 중";
    if (t.jobStatus === "failed") return `실패 ${row.error || ""}`;
    if (t.jobStatus === "expired") return "만료 (대기 시간 초과)";
    if (t.jobStatus === "canceled") return "취소됨";
    const actual = t.actualS != null ? `실제 ${t.actualS.toFixed(1)}초` : "";
    return `완료 · ${[promised, actual].filter(Boolean).join(" / ")}`;
  }

  function renderRows(burst) {
    const table = document.getElementById("rows");
    const done = burst.rows.filter((r) => r.state === "done");
    const scaleMs = Math.max(0, ...done.map((r) => r.totalMs));
    table.dataset.scaleMs = scaleMs.toFixed(1);
    table.dataset.path = burst.path;
    const body = table.tBodies[0];
    body.replaceChildren(
      ...burst.rows.map((row) => {
        const dataset = {
          index: String(row.index),
          state: row.state,
          status: row.status == null ? "" : String(row.status),
        };
        for (const [key, value] of [
          ["browserMs", row.browserMs],
          ["waitMs", row.waitMs],
          ["inferMs", row.inferMs],
          ["totalMs", row.totalMs],
          ["retryAfter", row.retryAfter],
          ["batchSize", row.batchSize],
          ["cache", row.cache],
          ["etaS", row.ticket && row.ticket.etaS],
          ["actualS", row.ticket && row.ticket.actualS],
          ["jobStatus", row.ticket && row.ticket.jobStatus],
        ]) {
          if (value !== null && value !== undefined) dataset[key] = String(value);
        }
        const roundTrip = el("td", {
          class: row.state === "done" ? "num rt" : "num rt elapsed",
          title: row.ticket ? `202까지 ${fmtMs(row.ticket.turnaroundMs)}` : "",
        });
        roundTrip.textContent = row.state === "done" ? fmtMs(row.totalMs) : elapsedText(burst, row);
        return el(
          "tr",
          { class: `row ${row.state === "done" ? "" : "pending"}`, dataset },
          el("td", { class: "num" }, String(row.index)),
          el("td", { class: "text", title: row.text }, row.text),
          statusCell(row),
          el("td", { class: "bar-col" }, barFor(row, scaleMs)),
          el("td", { class: "num" }, fmtMs(row.waitMs)),
          el("td", { class: "num" }, fmtMs(row.inferMs)),
          roundTrip,
          el("td", {}, row.top || ""),
        );
      }),
    );
  }

  /** A pending row's time since it was sent, counting up ("3.2초…"), so no row sits blank. */
  function elapsedText(burst, row) {
    if (burst.t0 == null || row.startMs == null) return "…";
    return `${((performance.now() - burst.t0 - row.startMs) / 1000).toFixed(1)}초…`;
  }

  /** Ten times a second, only the pending rows' elapsed cells change; the rest is redrawn on answers. */
  function tickElapsed() {
    const burst = state.view;
    if (!burst || !burst.running) return;
    for (const tr of document.querySelectorAll("#rows tbody tr.pending")) {
      const row = burst.rows[Number(tr.dataset.index) - 1];
      const cell = tr.querySelector("td.rt");
      if (row && cell) cell.textContent = elapsedText(burst, row);
    }
  }

  function summaryParts(s, path) {
    const counts = Object.entries(s.counts)
      .sort()
      .map(([status, n]) => `${status}×${n}`)
      .join(" ");
    const parts = [
      ["상태", counts],
      ["처리됨", `${s.served}/${s.size}`],
      ["왕복 p50", fmtMs(s.p50Ms)],
      ["p95", fmtMs(s.p95Ms)],
      ["처리량", s.throughput == null ? "–" : `${s.throughput.toFixed(2)}건/초`],
      ["평균 묶음", s.meanBatch == null ? "–" : path === "batched" ? s.meanBatch.toFixed(1) : "1 (묶지 않음)"],
    ];
    if (s.cacheHits) parts.push(["캐시 적중", String(s.cacheHits)]);
    if (s.etaLateS != null) parts.push(["ETA 대비", `${s.etaLateS >= 0 ? "+" : ""}${s.etaLateS.toFixed(2)}초`]);
    return parts;
  }

  function renderSummary(burst) {
    const box = document.getElementById("summary");
    if (!burst.summary) {
      box.replaceChildren();
      document.getElementById("burst-box").hidden = true;
      return;
    }
    box.replaceChildren(
      ...summaryParts(burst.summary, burst.path).map(([label, value]) => el("span", {}, `${label} `, el("b", {}, value))),
    );
    box.dataset.counts = JSON.stringify(burst.summary.counts);
    const record = document.getElementById("burst-box");
    record.hidden = !(burst.box && window.boxPanel);
    if (!record.hidden) record.textContent = `상자 상태 패널이 본 것: ${window.boxPanel.describeRecording(burst.box)}`;
  }

  // ---------------------------------------------------------------- comparing
  const burstKey = (path, mode, size) => `${path}|${mode}|${size}`;

  function burstLabel(burst) {
    return `${PATHS[burst.path].label} · ${MODES[burst.mode] || burst.mode} · ${burst.rows.length}개`;
  }

  /** The saved bursts in a stable order: by path, then distinct before repeat, then size. */
  function savedInOrder() {
    const pathOrder = Object.keys(PATHS);
    const modeOrder = Object.keys(MODES);
    return Object.entries(state.saved).sort(([, a], [, b]) => {
      return (
        pathOrder.indexOf(a.path) - pathOrder.indexOf(b.path) ||
        modeOrder.indexOf(a.mode) - modeOrder.indexOf(b.mode) ||
        a.rows.length - b.rows.length
      );
    });
  }

  /** One line, in Korean, on what this path gave up in this burst; numbers from the burst itself. */
  function gaveUp(burst) {
    const s = burst.summary;
    const refused = s.size - s.served;
    const fastest = Math.min(...burst.rows.filter(isServed).map((r) => r.totalMs));
    let line;
    if (burst.path === "naive") {
      line =
        `포기한 것: 빠른 답. 아무도 거절하지 않았지만 모두가 CPU를 나눠 써 p95 ${fmtMs(s.p95Ms)}` +
        (Number.isFinite(fastest) ? ` (가장 빠른 답 ${fmtMs(fastest)})` : "");
      const box = burst.box;
      if (box && box.peakRssBytes != null && box.rssBeforeBytes != null) {
        line += `, 메모리 +${((box.peakRssBytes - box.rssBeforeBytes) / 2 ** 20).toFixed(0)} MiB`;
      }
    } else if (burst.path === "limited") {
      line = refused
        ? `포기한 것: ${refused}/${s.size}개 요청. 바로 거절(429)하고 받은 ${s.served}개만 제때 처리`
        : `포기한 것: 이번엔 없음. 자리가 남아 ${s.served}개 모두 받음 (더 몰리면 거절)`;
    } else if (burst.path === "batched") {
      line =
        `포기한 것: 각자의 빠른 답. 묶음(평균 ${s.meanBatch == null ? "–" : s.meanBatch.toFixed(1)}개) 안의 모두가 ` +
        `묶음 전체가 끝날 때까지 기다림, p50 ${fmtMs(s.p50Ms)}`;
    } else {
      const late = s.etaLateS == null ? "" : `, 약속보다 평균 ${s.etaLateS >= 0 ? "+" : ""}${s.etaLateS.toFixed(1)}초`;
      line = `포기한 것: 한 번에 받는 답. 번호표를 받고 결과를 따로 기다려야 함, 결과까지 p95 ${fmtMs(s.p95Ms)}${late}`;
    }
    if (s.cacheHits) line += ` · 캐시가 ${s.cacheHits}개를 추론 없이 답함 (같은 리뷰일 때만)`;
    if (refused && burst.path !== "limited") line += ` · 실패/거절 ${refused}개`;
    return line;
  }

  function renderCompare() {
    const entries = savedInOrder();
    const cards = entries.map(([key, burst]) => {
      const when = new Date(burst.firedAt).toLocaleTimeString("ko-KR");
      const card = el(
        "div",
        { class: "compare-card", dataset: { key, path: burst.path, mode: burst.mode, size: String(burst.rows.length) } },
        el("h3", {}, burstLabel(burst), " ", el("small", {}, when)),
        ...summaryParts(burst.summary, burst.path).map(([k, v]) => el("span", { class: "kv" }, `${k} `, el("b", {}, v))),
        el("p", { class: "gave-up" }, gaveUp(burst)),
        burst.box && window.boxPanel
          ? el("p", { class: "box-record" }, `상자: ${window.boxPanel.describeRecording(burst.box)}`)
          : null,
      );
      card.addEventListener("click", () => selectBurst(key));
      return card;
    });
    if (!cards.length) cards.push(el("div", { class: "compare-card empty" }, "아직 없음: 발사하면 여기에 쌓입니다."));
    document.getElementById("compare-cards").replaceChildren(...cards);
    drawCompareChart();
  }

  /** Step between axis ticks: 1, 2 or 5 times a power of ten seconds, about six ticks in all. */
  function tickStepMs(maxMs) {
    const raw = maxMs / 6;
    const power = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 5, 10].map((m) => m * power).find((step) => step >= raw);
  }

  /**
   * Every saved burst as one strip on ONE time axis (0 = the burst fired): each request is a line from
   * when it was sent to when its answer was in hand; refused or failed ones end in a red ×, so a
   * 429 that came back in 80 ms is still visible. The width follows the card, so text keeps its size.
   */
  function drawCompareChart() {
    const holder = document.getElementById("compare-chart");
    const entries = savedInOrder();
    if (!entries.length) {
      holder.replaceChildren();
      return;
    }
    const ns = "http://www.w3.org/2000/svg";
    const width = Math.max(280, Math.floor(holder.clientWidth || 760));
    const left = 8;
    const right = 12;
    const span = width - left - right;
    const maxMs = Math.max(1, ...entries.flatMap(([, b]) => b.rows.map((r) => r.endMs || 0)));
    const step = tickStepMs(maxMs);
    const axisMs = Math.ceil(maxMs / step) * step;
    const x = (ms) => left + (ms / axisMs) * span;
    const svg = document.createElementNS(ns, "svg");
    const add = (parent, tag, attrs, text) => {
      const node = document.createElementNS(ns, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
      if (text !== undefined) node.textContent = text;
      parent.append(node);
      return node;
    };
    let y = 4;
    const grid = add(svg, "g", { class: "grid" });
    for (const [key, burst] of entries) {
      const s = burst.summary;
      const strip = add(svg, "g", { class: "strip", "data-key": key });
      add(strip, "text", { x: left, y: y + 12, "font-size": 12, "font-weight": 600 }, burstLabel(burst));
      add(
        strip,
        "text",
        { x: width - right, y: y + 12, "font-size": 11.5, fill: "#4b5563", "text-anchor": "end" },
        `처리 ${s.served} · 거절/실패 ${s.size - s.served}`,
      );
      y += 17;
      const lineH = Math.max(2, Math.min(5, Math.floor(36 / burst.rows.length)));
      for (const row of burst.rows) {
        const served = isServed(row);
        const start = x(row.startMs || 0);
        const end = Math.max(start + 1.5, x(row.endMs || 0));
        const cy = y + lineH / 2;
        add(strip, "line", {
          x1: start, x2: end, y1: cy, y2: cy,
          stroke: served ? "#0072B2" : "#D55E00",
          "stroke-width": Math.max(1, lineH - 1),
          class: served ? "served" : "refused",
        });
        if (!served) {
          // A 429 is back within milliseconds: a block at its end keeps it visible on a seconds axis.
          add(strip, "rect", { x: end, y: y, width: 5, height: Math.max(2, lineH - 1), fill: "#D55E00", class: "refused-mark" });
        }
        y += lineH;
      }
      y += 10;
    }
    for (let ms = 0; ms <= axisMs + 1e-6; ms += step) {
      add(grid, "line", { x1: x(ms), x2: x(ms), y1: 0, y2: y, stroke: "#e5e7eb" });
      const label = `${(ms / 1000).toFixed(step < 1000 ? 1 : 0)}초`;
      add(svg, "text", { x: x(ms), y: y + 12, "font-size": 11, fill: "#4b5563", "text-anchor": ms ? "middle" : "start" }, label);
    }
    y += 16;
    svg.setAttribute("viewBox", `0 0 ${width} ${y}`);
    svg.setAttribute("width", String(width));
    svg.setAttribute("height", String(y));
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "저장된 발사들을 한 시간축에 그린 그림");
    svg.dataset.axisMs = String(axisMs);
    const note = el(
      "p",
      { class: "hint" },
      "한 줄 = 요청 하나 (보낸 때 → 답을 받은 때, 모든 발사가 같은 시간축). ",
      el("span", { class: "key-served" }, "파랑"),
      " = 처리됨, ",
      el("span", { class: "key-refused" }, "빨강(끝에 네모)"),
      " = 거절·실패.",
    );
    holder.replaceChildren(svg, note);
  }

  // ---------------------------------------------------------------- state, storage, controls
  /** Saved bursts by burstKey; a v1 store (one per path) is carried over under its bursts' own keys. */
  function loadSaved() {
    try {
      const saved = JSON.parse(localStorage.getItem(STORE_KEY));
      if (saved) return saved;
      const old = JSON.parse(localStorage.getItem(OLD_STORE_KEY)) || {};
      return Object.fromEntries(
        Object.values(old).map((b) => [burstKey(b.path, b.mode || "distinct", b.rows.length), { mode: "distinct", ...b }]),
      );
    } catch {
      return {};
    }
  }

  function save(burst) {
    const key = burstKey(burst.path, burst.mode, burst.rows.length);
    const { t0, ...kept } = burst;
    state.saved[key] = { ...kept, rows: burst.rows.map((r) => ({ ...r })) };
    const oldestFirst = Object.entries(state.saved).sort(([, a], [, b]) => a.firedAt.localeCompare(b.firedAt));
    for (const [old] of oldestFirst.slice(0, Math.max(0, oldestFirst.length - MAX_SAVED))) delete state.saved[old];
    try {
      localStorage.setItem(STORE_KEY, JSON.stringify(state.saved));
      localStorage.removeItem(OLD_STORE_KEY);
    } catch {
      // Storage full or disabled: the comparison still lives in memory for this page.
    }
  }

  const state = { samples: FALLBACK_SAMPLES, saved: loadSaved(), view: null, running: false, bursts: 0 };
  // A per-page tag keeps "distinct" reviews distinct across reloads, so the cache cannot answer them.
  const pageTag = Math.random().toString(36).slice(2, 5);

  let renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(() => {
      renderQueued = false;
      render();
    });
  }

  function render() {
    const burst = state.view;
    const status = document.getElementById("burst-status");
    if (!burst) {
      document.getElementById("rows").tBodies[0].replaceChildren();
      document.getElementById("summary").replaceChildren();
      document.getElementById("burst-box").hidden = true;
      document.getElementById("burst-title").textContent = "";
      return;
    }
    document.getElementById("burst-title").textContent = burstLabel(burst) + (burst.restored ? " · 저장된 발사" : "");
    renderRows(burst);
    const done = burst.rows.filter((r) => r.state === "done").length;
    const scaleMs = Number(document.getElementById("rows").dataset.scaleMs);
    status.textContent = burst.running
      ? `발사 중… ${done}/${burst.rows.length} 끝남`
      : `${new Date(burst.firedAt).toLocaleTimeString("ko-KR")}에 발사, ${fmtMs(burst.summary.durationMs)} 만에 모두 끝남. ` +
        `막대는 가장 느린 요청(${fmtMs(scaleMs)}) 기준.`;
    status.dataset.state = burst.running ? "running" : "done";
    renderSummary(burst);
  }

  function selectedPath() {
    return document.querySelector('input[name="path"]:checked').value;
  }

  /** Shows the path's explanation and its most recent saved burst (any mode or size). */
  function showPath(path, key = null) {
    for (const note of document.querySelectorAll("[data-path-note]")) note.hidden = note.dataset.pathNote !== path;
    if (state.running) return;
    const latest = Object.entries(state.saved)
      .filter(([, b]) => b.path === path)
      .sort(([, a], [, b]) => b.firedAt.localeCompare(a.firedAt))[0];
    const saved = key ? state.saved[key] : latest && latest[1];
    state.view = saved ? { ...saved, restored: true } : null;
    render();
  }

  function selectBurst(key) {
    const burst = state.saved[key];
    if (!burst || state.running) return;
    document.querySelector(`input[name="path"][value="${burst.path}"]`).checked = true;
    showPath(burst.path, key);
  }

  function burstTexts(n, mode) {
    const samples = state.samples;
    if (mode === "repeat") return Array(n).fill(samples[0]);
    const offset = (state.bursts * n) % samples.length;
    const tag = `${pageTag}${state.bursts}`;
    return Array.from({ length: n }, (_, i) => `${samples[(offset + i) % samples.length]} #${tag}-${i + 1}`);
  }

  async function fireBurst(path, n, mode) {
    state.bursts += 1;
    const texts = burstTexts(n, mode);
    const burstTag = `${pageTag}${state.bursts}`;
    const burst = {
      path,
      mode,
      firedAt: new Date().toISOString(),
      running: true,
      rows: texts.map((text, i) => ({ index: i + 1, text, state: "sent", status: null })),
    };
    state.view = burst;
    state.running = true;
    const t0 = performance.now();
    burst.t0 = t0;
    render();
    const recorder = window.boxPanel ? window.boxPanel.record() : null;
    const ticker = setInterval(tickElapsed, 100);
    try {
      // All N fetches are issued in the same tick; the browser decides how many reach the server at once.
      const tickets = path === "tickets" ? ticketGathering(burst.rows.length) : null;
      await Promise.all(burst.rows.map((row) => fireOne(path, row, burstTag, t0, scheduleRender, tickets)));
    } finally {
      clearInterval(ticker);
      state.running = false;
      burst.running = false;
      burst.summary = summarize(burst);
      burst.box = recorder ? recorder.stop() : null;
      save(burst);
      render();
      renderCompare();
    }
  }

  async function loadSamples() {
    try {
      const response = await fetch("/api/samples", { cache: "no-store" });
      const samples = await response.json();
      if (Array.isArray(samples) && samples.length) state.samples = samples.map((s) => s.text);
    } catch {
      // Keep the built-in fallback list.
    }
  }

  function burstSize() {
    const input = document.getElementById("burst-size");
    const n = Math.min(MAX_BURST, Math.max(1, Math.round(Number(input.value) || 12)));
    input.value = String(n);
    document.getElementById("burst-size-range").value = String(n);
    return n;
  }

  function wire() {
    const fire = document.getElementById("fire");
    document.addEventListener("lab:box-died", () => render());
    fire.addEventListener("click", async () => {
      if (state.running) return;
      fire.disabled = true;
      try {
        const mode = document.querySelector('input[name="mode"]:checked').value;
        await fireBurst(selectedPath(), burstSize(), mode);
      } finally {
        fire.disabled = false;
      }
    });
    for (const radio of document.querySelectorAll('input[name="path"]')) {
      radio.addEventListener("change", () => showPath(radio.value));
    }
    document.getElementById("burst-size").addEventListener("change", burstSize);
    document.getElementById("burst-size-range").addEventListener("input", (event) => {
      document.getElementById("burst-size").value = event.target.value;
    });
    document.getElementById("forget").addEventListener("click", () => {
      state.saved = {};
      localStorage.removeItem(STORE_KEY);
      localStorage.removeItem(OLD_STORE_KEY);
      renderCompare();
      showPath(selectedPath());
    });
  }

  wire();
  showPath(selectedPath());
  renderCompare();
  let resizeQueued = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeQueued);
    resizeQueued = setTimeout(drawCompareChart, 150); // the chart's width follows its card
  });
  loadSamples();

  // For the console.
  window.reviewLab = { followTicket, followTickets, parseServerTiming, summarize };
})();
