// Following ④'s tickets to their results: one event stream for a whole burst, polling as the fallback.
import { parseServerTiming } from "./timing.js";

/** A ticket in one of these states will not change again. */
export const TERMINAL = new Set(["done", "failed", "expired", "canceled"]);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A ticket's JSON (from a GET or an event) as onUpdate gets it, plus `timing`: the parsed
 * Server-Timing header if there is one, else the same numbers from the body (events have no headers).
 */
export function withTiming(job, serverTiming = null) {
  const fromBody =
    job.status === "done" && job.waited_ms != null ? { wait: job.waited_ms, infer: job.inference_ms ?? 0 } : null;
  return { ...job, timing: parseServerTiming(serverTiming) || fromBody };
}

/**
 * Follow one ticket by polling GET /api/queue/jobs/{id} until it ends, calling onUpdate(job) with
 * every new state; resolves with the last one. Only the fallback: a burst follows all its tickets
 * over one stream (followTickets), and polls only if that stream fails (e.g. a proxy that buffers it).
 */
export async function followTicket(id, onUpdate) {
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
export function followTickets(followers) {
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
export function ticketGathering(expected) {
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
