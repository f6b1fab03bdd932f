// Firing one burst: N reviews POSTed to one path in the same tick, each row filled in from what its
// answer says (status, headers, Server-Timing) and what the browser measured; ④'s tickets followed.
import { pathNamed } from "./paths.js";
import { TERMINAL, ticketGathering, withTiming } from "./tickets.js";
import { browserQueuedMs, parseServerTiming, resourceTiming } from "./timing.js";

// Used only if /api/samples cannot be read; the box normally supplies its own 60 reviews.
let samples = [
  "빵이 맛있어요!", "커피가 너무 써요..", "사장님 친절하세요", "주차가 불편해요ㅠ",
  "가격이 좀 비싸요", "매장 깨끗하고 좋아요", "줄이 너무 길어요", "포장이 꼼꼼해요",
];
// A per-page tag keeps "distinct" reviews distinct across reloads, so the cache cannot answer them.
const pageTag = Math.random().toString(36).slice(2, 5);
let fired = 0;
// "거절되면 다시 오기": a refused request (429/503 with Retry-After) comes back after its Retry-After plus
// up to this much jitter, at most this many times, with the Seat-Hold token ② gave it (like burst.py --retry).
const RETRY_TIMES = 3;
const RETRY_JITTER_MS = 500;

/** Replaces the built-in reviews with the box's own (GET /api/samples); keeps them if that fails. */
export async function loadSamples() {
  try {
    const response = await fetch("/api/samples", { cache: "no-store" });
    const shipped = await response.json();
    if (Array.isArray(shipped) && shipped.length) samples = shipped.map((s) => s.text);
  } catch {
    // Keep the built-in fallback list.
  }
}

/** A new burst of `n` rows (each "sent") and its tag; "distinct" texts end in `#tag-i`, "repeat" are one review. */
export function newBurst(path, n, mode, retry = false) {
  // A page's first burst sends the first n samples, as `just burst` does: the same crowd from either client.
  const offset = (fired * n) % samples.length;
  fired += 1;
  const tag = `${pageTag}${fired}`;
  const texts =
    mode === "repeat"
      ? Array(n).fill(samples[0])
      : Array.from({ length: n }, (_, i) => `${samples[(offset + i) % samples.length]} #${tag}-${i + 1}`);
  const burst = {
    path,
    mode,
    retry,
    firedAt: new Date().toISOString(),
    running: true,
    rows: texts.map((text, i) => ({ index: i + 1, text, state: "sent", status: null })),
  };
  return { burst, tag };
}

/**
 * Fires every row of `burst` at once (the browser decides how many reach the server at once) and
 * resolves when all are done. `changed()` is called after each step; `boxDeaths()` is the panel's count.
 */
export async function runBurst(burst, tag, { changed, boxDeaths }) {
  const path = pathNamed(burst.path);
  const tickets = path.answer === "ticket" ? ticketGathering(burst.rows.length) : null;
  const retry = Boolean(burst.retry) && path.answer === "direct";
  await Promise.all(burst.rows.map((row) => fireOne(path, row, tag, burst.t0, changed, tickets, boxDeaths, retry)));
}

/**
 * One request of a burst, and with `retry` its returns: every try is kept in `row.attempts`, and the
 * row ends as its last try, its time counted from the first send (what the student waited in all).
 */
async function fireOne(path, row, burstTag, t0, changed, tickets, boxDeaths, retry) {
  row.attempts = [];
  let hold = null;
  for (let attempt = 1; ; attempt += 1) {
    const again = attempt > 1 ? `&try=${attempt}` : "";
    const url = new URL(`${path.route}?burst=${burstTag}&i=${row.index}${again}`, location.href).href;
    hold = await fireAttempt(path, row, url, t0, changed, tickets, boxDeaths, hold);
    row.attempts.push({
      startMs: row.startMs,
      endMs: row.endMs,
      status: row.status,
      retryAfter: row.retryAfter,
      hold: hold ? "held" : row.holdResult,
      waitMs: row.waitMs,
      inferMs: row.inferMs,
      browserMs: row.browserMs,
    });
    const refused = (row.status === 429 || row.status === 503) && row.retryAfter;
    if (!retry || !refused || attempt > RETRY_TIMES) break;
    row.state = "outside";
    changed();
    const backMs = Number(row.retryAfter) * 1000 + Math.random() * RETRY_JITTER_MS;
    await new Promise((resolve) => setTimeout(resolve, backMs));
  }
  const first = row.attempts[0];
  row.startMs = first.startMs;
  row.totalMs = row.endMs - first.startMs;
  row.state = "done";
  changed();
}

/**
 * One try of a request; fills `row` as answers arrive and calls `changed()` after each step; returns
 * the Seat-Hold token a refusal gave (or null). `hold` is the token to present.
 * On a ticket path, the ticketGathering follows the ticket together with the rest of the burst.
 */
async function fireAttempt(path, row, url, t0, changed, tickets, boxDeaths, hold) {
  const started = performance.now();
  row.startMs = started - t0;
  row.boxDeaths = boxDeaths();
  let response;
  let body = null;
  try {
    response = await fetch(url, {
      method: "POST",
      headers: hold ? { "Content-Type": "application/json", "Seat-Hold": hold } : { "Content-Type": "application/json" },
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
    return null;
  }
  row.roundTripMs = performance.now() - started;
  row.browserMs = browserQueuedMs(await resourceTiming(url));
  row.status = response.status;
  row.retryAfter = response.headers.get("Retry-After");
  row.holdResult = response.headers.get("Seat-Hold-Result");
  row.waitMs = null;
  row.inferMs = null;
  row.cache = response.headers.get("X-Cache");
  const batch = response.headers.get("X-Batch-Size");
  row.batchSize = batch === null ? null : Number(batch);
  const batchId = response.headers.get("X-Batch-Id");
  row.batchId = batchId === null ? null : Number(batchId);
  row.error = body && body.error ? body.error : null;
  applyTiming(row, parseServerTiming(response.headers.get("Server-Timing")));
  if (body && body.top) row.top = body.top.label;

  if (path.answer === "ticket" && response.status === 202 && body) {
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
  return response.headers.get("Seat-Hold");
}

function applyTiming(row, timing) {
  if (!timing) return;
  if (timing.wait !== undefined) row.waitMs = timing.wait;
  if (timing.infer !== undefined) row.inferMs = timing.infer;
}
