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
 * The student's ③ batches, by X-Batch-Id. Each member is answered when its own pairs are done, so a batch's
 * time is its last member's inference time, known only if the student saw every member: `points` are those
 * batches ({n, seconds, count: 1}); `partial` counts batches shared with other clients (not drawn).
 * Cache hits and failures are not batches.
 */
export function studentBatches(burst) {
  if (!batches(burst)) return { points: [], partial: 0 };
  const groups = new Map();
  for (const row of burst.rows) {
    if (row.status !== 200 || !row.batchSize || row.batchId == null || row.inferMs == null || row.cache === "hit") continue;
    const group = groups.get(row.batchId) || { n: row.batchSize, ms: 0, answers: 0 };
    group.answers += 1;
    group.ms = Math.max(group.ms, row.inferMs);
    groups.set(row.batchId, group);
  }
  const whole = [...groups.values()].filter((g) => g.answers === g.n);
  return { points: whole.map((g) => ({ n: g.n, seconds: g.ms / 1000, count: 1 })), partial: groups.size - whole.length };
}
