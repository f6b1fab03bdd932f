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
export function newBurst(path, n, mode) {
  fired += 1;
  const tag = `${pageTag}${fired}`;
  const offset = (fired * n) % samples.length;
  const texts =
    mode === "repeat"
      ? Array(n).fill(samples[0])
      : Array.from({ length: n }, (_, i) => `${samples[(offset + i) % samples.length]} #${tag}-${i + 1}`);
  const burst = {
    path,
    mode,
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
  await Promise.all(burst.rows.map((row) => fireOne(path, row, tag, burst.t0, changed, tickets, boxDeaths)));
}

/**
 * One request of a burst; fills `row` as answers arrive and calls `changed()` after each step.
 * On a ticket path, the ticketGathering follows the ticket together with the rest of the burst.
 */
async function fireOne(path, row, burstTag, t0, changed, tickets, boxDeaths) {
  const url = new URL(`${path.route}?burst=${burstTag}&i=${row.index}`, location.href).href;
  const started = performance.now();
  row.startMs = started - t0;
  row.boxDeaths = boxDeaths();
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
  row.browserMs = browserQueuedMs(await resourceTiming(url));
  row.status = response.status;
  row.retryAfter = response.headers.get("Retry-After");
  row.cache = response.headers.get("X-Cache");
  const batch = response.headers.get("X-Batch-Size");
  row.batchSize = batch === null ? null : Number(batch);
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
}

function applyTiming(row, timing) {
  if (!timing) return;
  if (timing.wait !== undefined) row.waitMs = timing.wait;
  if (timing.infer !== undefined) row.inferMs = timing.infer;
}
