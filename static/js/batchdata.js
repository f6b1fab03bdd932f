// The numbers behind ③'s batching figure: the box's speed factor, the curves at that speed, and the
// student's own batches from a ③ burst's answers (X-Batch-Size and Server-Timing's inference).
import { pathNamed } from "./paths.js";

/**
 * How the host's measured seconds become the box's: the box's median review now (/api/model →
 * box.speed: the last minute's measured median, else its target) over the same median review timed by
 * the bench. `speed` null: the server is not slowed, the host's seconds are its own.
 */
export function boxScale(reference, speed) {
  if (!speed) return { factor: 1, boxSeconds: null, measured: false };
  const measured = speed.achieved_s !== null && speed.achieved_s !== undefined;
  const boxSeconds = measured ? speed.achieved_s : speed.target_s;
  return { factor: boxSeconds / reference.seconds, boxSeconds, measured };
}

/** A committed curve at the box's speed: points and fit multiplied by the factor (never below 0). */
export function atBoxSpeed(curve, factor) {
  return {
    points: curve.points.map((p) => ({ n: p.n, seconds: p.seconds * factor })),
    fit: { a: Math.max(0, curve.fit.a_s) * factor, b: Math.max(0, curve.fit.b_s) * factor },
  };
}

/** Per-review change at the largest measured n against one at a time, in percent (negative: cheaper). */
export function perReviewChange(points) {
  const one = points.find((p) => p.n === 1);
  const last = points[points.length - 1];
  return { n: last.n, perReview: last.seconds / last.n, alone: one.seconds, pct: (last.seconds / last.n / one.seconds - 1) * 100 };
}

/** Whether a burst went to a path that batches (③: its answers carry X-Batch-Size). */
export function batches(burst) {
  return Boolean(burst && pathNamed(burst.path)?.batches);
}

/**
 * One point per batch the student's ③ burst saw: every answer of one batch carries the same batch size
 * and the same inference time, so answers are grouped by the two. Cache hits and failures are not batches.
 */
export function studentBatches(burst) {
  if (!batches(burst)) return [];
  const groups = new Map();
  for (const row of burst.rows) {
    if (row.status !== 200 || !row.batchSize || row.inferMs === null || row.inferMs === undefined || row.cache === "hit") continue;
    const key = `${row.batchSize}|${row.inferMs.toFixed(1)}`;
    const group = groups.get(key) || { n: row.batchSize, seconds: row.inferMs / 1000, answers: 0 };
    group.answers += 1;
    groups.set(key, group);
  }
  return [...groups.values()].map((g) => ({ n: g.n, seconds: g.seconds, count: Math.max(1, Math.round(g.answers / g.n)) }));
}
