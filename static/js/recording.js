// What the status panel saw during one burst, and the one Korean line that describes it (shown under
// the burst's summary and on its comparison card, and kept with the saved burst).
import { PATHS } from "./paths.js";

const MIB = 2 ** 20;
export const mib = (bytes) => `${(bytes / MIB).toFixed(0)} MiB`;
const memoryOf = (stats) => (stats.memory ? stats.memory.bytes : stats.process.rss_bytes);
const incarnation = (stats) => (stats.box && stats.box.incarnation != null ? stats.box.incarnation : null);

/**
 * What the panel saw during one burst: peak memory as the box counts it against its cap (and before), the peak waiting and in-flight
 * count per path, whether the lane was ever busy, the longest gap between updates, and whether the
 * box died: the page saw it die (death.js's count grew) or its incarnation changed; null when neither
 * can be told. The count matters: a burst the box died in usually ends (in 502s) before the panel hears
 * from the next incarnation, so the last body it saw is still the dead one's.
 * `last` and `lastAt` are the panel's latest /api/stats body and when it came (null before any);
 * `deaths` is how often the page has seen the box die so far.
 */
export class Recording {
  constructor(last, lastAt, deaths) {
    this.deathsBefore = deaths;
    this.startedAt = performance.now();
    this.lastSeenAt = lastAt;
    this.maxGapMs = 0;
    this.updates = 0;
    this.lost = false;
    this.before = last;
    this.peakMemory = last ? memoryOf(last) : null;
    this.peakPct = last && last.memory ? last.memory.pct_of_cap : null;
    this.peakWaiting = {};
    this.peakInFlight = {};
    this.laneBusy = false;
    this.channels = new Set();
  }

  /** One /api/stats body that arrived at `now` over `channel` ("websocket" or "polling"). */
  observe(stats, now, channel) {
    this.maxGapMs = Math.max(this.maxGapMs, now - Math.max(this.startedAt, this.lastSeenAt ?? this.startedAt));
    this.lastSeenAt = now;
    this.updates += 1;
    this.channels.add(channel);
    this.after = stats;
    if (memoryOf(stats) >= (this.peakMemory ?? 0)) {
      this.peakMemory = memoryOf(stats);
      this.peakPct = stats.memory ? stats.memory.pct_of_cap : null;
    }
    this.laneBusy = this.laneBusy || stats.lane.busy;
    for (const [path, p] of Object.entries(stats.paths)) {
      this.peakWaiting[path] = Math.max(this.peakWaiting[path] || 0, p.waiting);
      this.peakInFlight[path] = Math.max(this.peakInFlight[path] || 0, p.in_flight);
    }
  }

  /** The record so far; `channel` is the panel's channel now, named if nothing arrived yet; `deaths` as above. */
  snapshot(channel, deaths) {
    const now = performance.now();
    const gap = now - Math.max(this.startedAt, this.lastSeenAt ?? this.startedAt);
    const first = this.before ? incarnation(this.before) : null;
    const latest = this.after ? incarnation(this.after) : null;
    const restarted = first === null || latest === null ? null : latest !== first;
    return {
      updates: this.updates,
      maxGapMs: Math.round(Math.max(this.maxGapMs, gap)),
      channel: [...this.channels].join("+") || channel,
      lostSocket: this.lost,
      memoryBeforeBytes: this.before ? memoryOf(this.before) : null,
      peakMemoryBytes: this.peakMemory,
      peakMemoryPct: this.peakPct,
      peakWaiting: { ...this.peakWaiting },
      peakInFlight: { ...this.peakInFlight },
      laneBusy: this.laneBusy,
      boxDied: deaths > this.deathsBefore ? true : restarted,
      lastDeath: this.after && this.after.box ? this.after.box.last_death ?? null : null,
    };
  }
}

/** The box's own peak for a burst it died in (its memory group's, or the watchdog's), over the panel's samples. */
export function tookDeathPeak(snapshot, peakBytes, capBytes) {
  if (snapshot.peakMemoryBytes != null && snapshot.peakMemoryBytes >= peakBytes) return;
  snapshot.peakMemoryBytes = peakBytes;
  snapshot.peakMemoryPct = capBytes ? (peakBytes * 100) / capBytes : snapshot.peakMemoryPct;
  snapshot.peakFromBox = true;
}

/** One line for a burst's record, in Korean; shared with the comparison cards. */
export function describeRecording(r) {
  if (!r) return "";
  const parts = [];
  if (r.peakMemoryBytes != null) {
    const delta = r.memoryBeforeBytes != null ? r.peakMemoryBytes - r.memoryBeforeBytes : null;
    const sign = delta != null && delta >= 0 ? "+" : "";
    const pct = r.peakMemoryPct == null ? "" : `, 상한의 ${r.peakMemoryPct.toFixed(0)}%`;
    const whose = r.peakFromBox ? " (죽은 상자가 잰 최고치)" : "";
    parts.push(
      `최대 메모리 ${mib(r.peakMemoryBytes)}${pct}${whose}${delta != null ? ` (발사 전보다 ${sign}${(delta / MIB).toFixed(0)})` : ""}`,
    );
  }
  const waiting = PATHS.filter(({ name }) => r.peakWaiting[name] > 0).map(
    ({ name, number }) => `${number} ${r.peakWaiting[name]}`,
  );
  parts.push(`서버 최대 대기 ${waiting.length ? waiting.join(" · ") : "0"}`);
  // Only when /api/stats reports the box's incarnation; otherwise a restart cannot be told from here.
  if (r.boxDied !== null) parts.push(r.boxDied ? "⚠ 상자가 죽었다 다시 떴습니다" : "상자 살아 있음");
  if (r.lostSocket) parts.push("발사 중 WebSocket이 끊김");
  parts.push(`패널 갱신 ${r.updates}번, 최대 간격 ${(r.maxGapMs / 1000).toFixed(1)}초`);
  return parts.join(" · ");
}
