// What the page reads about each request's time: the server's Server-Timing header, and the browser's
// own resource timing entry for that fetch (how long it sat inside the browser before a byte went out).

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

/** The resource timing entry of the fetch of `url`, or null if none arrives within `limitMs`. */
export function resourceTiming(url, limitMs = 3000) {
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

/** Milliseconds a fetch waited inside the browser before its request went out; null if unknown. */
export function browserQueuedMs(entry) {
  return entry && entry.requestStart > 0 ? Math.max(0, entry.requestStart - entry.startTime) : null;
}

/** `wait;dur=12.5, infer;dur=980.1` → {wait: 12.5, infer: 980.1} (milliseconds); null if absent. */
export function parseServerTiming(header) {
  if (!header) return null;
  const timing = {};
  for (const metric of header.split(",")) {
    const [name, ...params] = metric.trim().split(";");
    const dur = params.map((p) => p.trim()).find((p) => p.startsWith("dur="));
    if (name && dur) timing[name.trim()] = Number(dur.slice(4));
  }
  return timing;
}
