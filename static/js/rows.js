// The results table: one row per request with its status and its timing bar (drawn from Server-Timing
// and the browser's own measurements, scaled to the slowest request), and the burst's summary line.
import { el, fmtMs } from "./dom.js";
import { describeRecording } from "./recording.js";
import { pathNamed } from "./paths.js";
import { refusedBy } from "./summary.js";

/**
 * Bar segments in drawing order, in milliseconds; what is not accounted for is "other". A row that came
 * back after a refusal ("거절되면 다시 오기") first shows each refused try and the time it waited outside.
 */
function segments(row) {
  const tries = row.state === "done" && row.attempts && row.attempts.length > 1 ? row.attempts : null;
  const before = [];
  if (tries) {
    for (let i = 0; i < tries.length - 1; i += 1) {
      before.push(["refused", tries[i].endMs - tries[i].startMs]);
      before.push(["outside", tries[i + 1].startMs - tries[i].endMs]);
    }
  }
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
  const last = tries ? tries[tries.length - 1] : null;
  const total = row.state === "done" ? (last ? last.endMs - last.startMs : row.totalMs) : known;
  return [
    ...before,
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

// The handout's words for the two 429s: same number, another reason.
const REFUSAL_WORDS = { front: "한 사람이 너무 자주 (앞단)", box: "상자가 감당 못 함" };

/** The box died while this row waited: its answer is the front's 502 or a cut connection. */
export function ranIntoDeath(row, boxDeaths) {
  return row.state === "done" && (row.status === null || row.status === 502) && boxDeaths > row.boxDeaths;
}

/** The response cell; `boxDeaths` is how often the box has died so far (the panel's count). */
function statusCell(row, boxDeaths) {
  if (row.state === "sent") return el("td", { class: "status" }, "보냄…");
  if (row.state === "outside") return el("td", { class: "status s4" }, `${row.retryAfter}초 뒤 다시 오는 중…`);
  const died = ranIntoDeath(row, boxDeaths);
  if (row.status === null) {
    return el("td", { class: "status err", title: row.error }, died ? "상자가 죽어 연결이 끊김" : "연결 오류");
  }
  const cls = `status s${String(row.status)[0]}${died ? " died" : ""}`;
  let detail = died ? "상자가 죽음" : "";
  if (row.retryAfter) detail = `${row.retryAfter}초 뒤 다시`;
  if (row.error && row.status >= 400) {
    const why = REFUSAL_WORDS[refusedBy(row)];
    detail = `${row.error}${why ? " — " + why : ""}${detail ? " · " + detail : ""}`;
  }
  if (row.ticket) detail = ticketDetail(row);
  const cell = el("td", { class: cls }, String(row.status));
  if (detail) cell.append(el("span", { class: "detail" }, detail));
  if (row.cache === "hit") cell.append(el("span", { class: "badge" }, "캐시"));
  if (row.batchSize) cell.append(el("span", { class: "badge" }, `묶음 ${row.batchSize}`));
  if (row.attempts && row.attempts.length > 1) {
    const statuses = row.attempts.map((a) => a.status ?? "오류").join("→");
    cell.append(el("span", { class: "detail" }, `시도 ${row.attempts.length}번: ${statuses}`));
    if (row.holdResult === "seated") cell.append(el("span", { class: "badge" }, "맡아 둔 자리"));
  }
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

/** Redraws every row of `burst`, its bars scaled to the slowest finished request. */
export function renderRows(burst, boxDeaths) {
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
        ["attempts", row.attempts && row.attempts.map((a) => a.status ?? "error").join(",")],
        ["hold", row.holdResult],
      ]) {
        if (value !== null && value !== undefined) dataset[key] = String(value);
      }
      const roundTrip = el("td", {
        class: row.state === "done" ? "num rt" : "num rt elapsed",
        dataset: { label: "왕복" },
        title: row.ticket ? `202까지 ${fmtMs(row.ticket.turnaroundMs)}` : "",
      });
      roundTrip.textContent = row.state === "done" ? fmtMs(row.totalMs) : elapsedText(burst, row);
      return el(
        "tr",
        { class: `row ${row.state === "done" ? "" : "pending"}`, dataset },
        el("td", { class: "num idx" }, String(row.index)),
        el("td", { class: "text", title: row.text }, row.text),
        statusCell(row, boxDeaths),
        el("td", { class: "bar-col" }, barFor(row, scaleMs)),
        // data-label: on a phone the row reflows into a card and each number carries its own name.
        el("td", { class: "num wait", dataset: { label: "서버 대기" } }, fmtMs(row.waitMs)),
        el("td", { class: "num infer", dataset: { label: "추론" } }, fmtMs(row.inferMs)),
        roundTrip,
        el("td", { class: "top" }, row.top || ""),
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
export function tickElapsed(burst) {
  if (!burst || !burst.running) return;
  for (const tr of document.querySelectorAll("#rows tbody tr.pending")) {
    const row = burst.rows[Number(tr.dataset.index) - 1];
    const cell = tr.querySelector("td.rt");
    if (row && cell) cell.textContent = elapsedText(burst, row);
  }
}

/** [label, value] pairs of a burst's summary, shared with the comparison cards. */
export function summaryParts(s, path) {
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
    ["평균 묶음", s.meanBatch == null ? "–" : pathNamed(path)?.batches ? s.meanBatch.toFixed(1) : "1 (묶지 않음)"],
  ];
  if (s.refusals && s.refusals.box) parts.push(["상자가 감당 못 함 (429 box_full)", String(s.refusals.box)]);
  if (s.refusals && s.refusals.front) parts.push(["한 사람이 너무 자주 (429 front_limit)", String(s.refusals.front)]);
  if (s.cacheHits) parts.push(["캐시 적중", String(s.cacheHits)]);
  if (s.etaLateS != null) parts.push(["ETA 대비", `${s.etaLateS >= 0 ? "+" : ""}${s.etaLateS.toFixed(2)}초`]);
  if (s.attemptsMean != null) {
    parts.push(["마지막 학생 처리까지", fmtMs(s.lastServedMs)]);
    parts.push(["학생당 시도", `평균 ${s.attemptsMean.toFixed(1)} (최대 ${s.attemptsMax})`]);
    parts.push(["첫 재방문에 자리", `${s.seatedFirstReturn}/${s.returners}`]);
  }
  return parts;
}

/** The summary line under the rows, and what the panel saw during the burst. */
export function renderSummary(burst) {
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
  record.hidden = !burst.box;
  if (!record.hidden) record.textContent = `상자 상태 패널이 본 것: ${describeRecording(burst.box)}`;
}
