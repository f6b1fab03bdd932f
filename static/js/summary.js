// A finished burst in numbers: what was served, how fast, how much per second, in what batches.

function quantile(sorted, q) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** A row got its answer: a 200, or a ticket that ended done. */
export function isServed(row) {
  return row.ticket ? row.ticket.jobStatus === "done" : row.status === 200;
}

/**
 * Who refused a 429: the classroom front ("한 사람이 너무 자주": this student over their share, its
 * `front_limit`) or the box ("상자가 감당 못 함": everyone at once, its `box_full` or ④'s `job_queue_full`).
 * The handout's words: 같은 번호, 다른 이유.
 */
export function refusedBy(row) {
  if (row.status !== 429) return null;
  return row.error === "front_limit" ? "front" : "box";
}

/** Counts by status, p50/p95 of the served requests' time to an answer, throughput, mean batch. */
export function summarize(burst) {
  const counts = {};
  const refusals = { front: 0, box: 0 };
  for (const row of burst.rows) {
    const key = row.status === null || row.status === undefined ? "오류" : String(row.status);
    counts[key] = (counts[key] || 0) + 1;
    const by = refusedBy(row);
    if (by) refusals[by] += 1;
  }
  const served = burst.rows.filter(isServed);
  const totals = served.map((r) => r.totalMs).sort((a, b) => a - b);
  const durationMs = Math.max(0, ...burst.rows.map((r) => r.endMs || 0));
  const batches = burst.rows.filter((r) => r.batchSize).map((r) => r.batchSize);
  const inferred = served.filter((r) => r.cache !== "hit" && !(r.ticket && r.inferMs === 0));
  const etaRows = burst.rows.filter((r) => r.ticket && r.ticket.actualS != null && r.ticket.etaS != null);
  return {
    ...(burst.retry ? comingBack(burst, served) : {}),
    counts,
    refusals,
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

/** "거절되면 다시 오기": until the last student was served, tries per student, seated on the first return. */
function comingBack(burst, served) {
  const tries = burst.rows.map((r) => (r.attempts && r.attempts.length) || 1);
  const returners = burst.rows.filter((r) => r.attempts && r.attempts.length > 1);
  return {
    lastServedMs: served.length ? Math.max(...served.map((r) => r.endMs)) : null,
    attemptsMean: tries.reduce((a, b) => a + b, 0) / tries.length,
    attemptsMax: Math.max(...tries),
    returners: returners.length,
    seatedFirstReturn: returners.filter((r) => r.attempts[1].status === 200).length,
  };
}
