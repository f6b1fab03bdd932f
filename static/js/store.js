// The last burst of each path, review mode and size, kept in this browser (localStorage) for comparing.
import { pathNamed } from "./paths.js";

const STORE_KEY = "review-lab.last-bursts.v2";
const MAX_SAVED = 12; // the oldest saved bursts beyond this are forgotten

const burstKey = (path, mode, size) => `${path}|${mode}|${size}`;

/** What this browser kept, by burstKey; bursts of a path this box does not serve are left out. */
function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORE_KEY)) || {};
    return Object.fromEntries(Object.entries(saved).filter(([, burst]) => pathNamed(burst.path)));
  } catch {
    return {};
  }
}

/** The saved bursts: one per path, review mode and size, at most MAX_SAVED, newest kept. */
export class SavedBursts {
  constructor() {
    this.byKey = load();
  }

  get(key) {
    return this.byKey[key];
  }

  /** [key, burst] pairs, in no particular order. */
  entries() {
    return Object.entries(this.byKey);
  }

  /** The most recently fired saved burst of `path` (any mode or size), or undefined. */
  latestOf(path) {
    const latest = this.entries()
      .filter(([, b]) => b.path === path)
      .sort(([, a], [, b]) => b.firedAt.localeCompare(a.firedAt))[0];
    return latest && latest[1];
  }

  /** Keeps a finished burst (a copy, without its clock origin t0) under its key, replacing the one before. */
  save(burst) {
    const key = burstKey(burst.path, burst.mode, burst.rows.length);
    const { t0, ...kept } = burst;
    this.byKey[key] = { ...kept, rows: burst.rows.map((r) => ({ ...r })) };
    const oldestFirst = this.entries().sort(([, a], [, b]) => a.firedAt.localeCompare(b.firedAt));
    for (const [old] of oldestFirst.slice(0, Math.max(0, oldestFirst.length - MAX_SAVED))) delete this.byKey[old];
    try {
      localStorage.setItem(STORE_KEY, JSON.stringify(this.byKey));
    } catch {
      // Storage full or disabled: the comparison still lives in memory for this page.
    }
  }

  forget() {
    this.byKey = {};
    localStorage.removeItem(STORE_KEY);
  }
}
