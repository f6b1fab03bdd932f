// The lesson as the class view holds it: every request the box recorded (by id), the students and the marks, kept
// up to date from the view's one live socket (/api/class/live), and the tallies drawn under the lanes.

export const OUTCOMES = Object.freeze({
  served: { label: "받음", color: "#009e73" },
  refused: { label: "거절 (이유는 아래 표)", color: "#e69f00" },
  late: { label: "기한 넘겨 거절 (503)", color: "#d55e00" },
  waiting: { label: "아직 기다리는 중", color: "#0072b2" },
  cut: { label: "상자가 죽어 끊김", color: "#000000" },
  gone: { label: "학생이 먼저 떠남", color: "#8a8a8a" },
  error: { label: "잘못된 요청·오류", color: "#cc79a7" },
});

export const MARKS = Object.freeze({
  death: { label: "상자 죽음", color: "#a3000b" },
  start: { label: "상자 켜짐", color: "#009e73" },
  knob: { label: "손잡이", color: "#0072b2" },
  lost: { label: "연결 끊김", color: "#6b6b6b" },
});

// A refusal's reason as the class reads it (the box's `reason`, app/paths/*.py); an unknown one is shown as it is.
export const REASONS = Object.freeze({
  seats_full: "자리 없음",
  waited_too_long: "너무 오래 기다림",
  queue_too_long: "줄이 너무 김",
  job_queue_full: "번호표 다 참",
  over_target: "줄이 목표를 넘음",
  memory_would_not_fit: "메모리 부족",
});

const BURST_GAP_S = 10; // a path's last burst: its arrivals since the last quiet gap this long

export class Lesson {
  constructor() {
    this.entries = new Map();
    this.students = new Map();
    this.marks = new Map();
    this.lost = []; // this view's own marks: when its socket dropped (the box's marks replace them on return)
    this.offset = 0; // the box's clock minus this browser's, in seconds
    this.incarnation = null;
    this.kept = null;
  }

  /** One message of the live socket: the whole record ("whole") or a tick's changes ("delta"). */
  apply(message) {
    if (message.kind === "whole") {
      this.entries.clear();
      this.students.clear();
      this.marks.clear();
      this.lost = [];
      this.kept = message.kept;
    }
    for (const [key, student] of Object.entries(message.students)) this.students.set(key, student);
    for (const mark of message.marks) this.marks.set(mark.id, mark);
    for (const entry of message.entries) this.entries.set(entry.id, entry);
    this.offset = message.now - Date.now() / 1000;
    this.incarnation = message.incarnation;
  }

  now() {
    return Date.now() / 1000 + this.offset;
  }

  /** The socket dropped: the box may have died. Drawn until the box's own marks come back. */
  dropped() {
    this.lost.push({ id: `lost-${this.lost.length}`, kind: "lost", at: this.now() });
  }

  name(key) {
    const student = this.students.get(key);
    return student ? student.name : key;
  }

  number(key) {
    const student = this.students.get(key);
    return student ? student.number : Infinity;
  }

  allMarks() {
    return [...this.marks.values(), ...this.lost].sort((a, b) => a.at - b.at);
  }

  /** The first moment the record knows of (its oldest request or mark), or now. */
  start() {
    let first = this.now();
    for (const e of this.entries.values()) first = Math.min(first, e.arrived);
    for (const m of this.marks.values()) first = Math.min(first, m.at);
    return first;
  }
}

/** When the bar of a request ends: its answer, a ticket's end, or now while it waits. */
export function endOf(entry, now) {
  return entry.ticket_end ?? entry.answered ?? now;
}

/** Served as the student's page counts it: a 2xx, and for a ticket, its end (done). */
export function isServed(entry) {
  return entry.ticket ? entry.ticket_status === "done" : entry.outcome === "served";
}

function quantile(sorted, q) {
  if (!sorted.length) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

/** The path's last burst: its requests since the last gap of BURST_GAP_S without an arrival. */
export function lastBurst(entries) {
  const byArrival = [...entries].sort((a, b) => a.arrived - b.arrived);
  let from = 0;
  for (let i = 1; i < byArrival.length; i += 1) {
    if (byArrival[i].arrived - byArrival[i - 1].arrived > BURST_GAP_S) from = i;
  }
  return byArrival.slice(from);
}

/**
 * Returns the box can tell: a request that presented ②'s Seat-Hold token (its answer's Seat-Hold-Result says what the
 * token got). Any other return looks like a new request: the box cannot tell it from one (no token, no marker).
 */
function returns(entries) {
  const presented = entries.filter((e) => e.hold);
  return { presented: presented.length, seated: presented.filter((e) => e.hold === "seated" && isServed(e)).length };
}

/** One path's tally: requests, served, refused by reason, cut, time to an answer (served only), held-seat returns. */
export function tally(entries) {
  const reasons = {};
  let refused = 0;
  let cut = 0;
  for (const e of entries) {
    if (e.outcome === "refused" || e.outcome === "late") {
      refused += 1;
      const reason = e.reason || e.error || "?";
      reasons[reason] = (reasons[reason] || 0) + 1;
    }
    if (e.outcome === "cut") cut += 1;
  }
  const served = entries.filter(isServed);
  const waits = served.map((e) => (endOf(e, e.arrived) - e.arrived) * 1000).sort((a, b) => a - b);
  return {
    requests: entries.length,
    served: served.length,
    refused,
    reasons,
    cut,
    p50Ms: quantile(waits, 0.5),
    p95Ms: quantile(waits, 0.95),
    longestMs: waits.length ? waits[waits.length - 1] : null,
    returns: returns(entries),
  };
}
