"""The catalogue of Prometheus metrics, all prefixed `review_`, in base units, with bounded labels only.

Names and help texts live here; the numbers do not.
Each owner counts its own (app/observe/collector.py reads them at scrape time); the one counter kept here
is the middleware's count of answers, because the middleware is the only one that sees them all.

Labels: `path` is a registered path's name (app/paths/registry.py, which also names the statuses and
refusal reasons each path's series are born with, at 0: Prometheus' rate() cannot see the increments
before a series' first scrape, so a lazily created 429 counter would hide the first burst);
`reason` and `status` come from small fixed sets. Nothing per request or per client ever becomes a label.
"""

import threading

HELP = {
    "review_requests": "Prediction requests answered, by path and HTTP status.",
    "review_in_flight": "Requests being inferred right now (처리 중), by path.",
    "review_waiting": "Requests or jobs admitted and waiting for the lane (대기), by path.",
    "review_path_state": "Each path's own numbers, as in /api/stats (②: seats_taken, capacity, held; "
    "⑤: limit, standing, newest_first), by path and name.",
    "review_rejections": "Requests refused, by path and reason (each path's reasons are in app/paths/registry.py).",
    "review_wait_seconds": "Time from arrival to the start of inference, by path.",
    "review_inference_seconds": "Time one inference call took on the model, by path.",
    "review_batch_size": "Reviews per batch on the batched path.",
    "review_batches": "Batches sent to the lane, by why (full, timer, lane_free).",
    "review_jobs": "Ticket jobs known to this process, by status.",
    "review_cache_hits": "Predictions answered from the result cache, by path.",
    "review_lane_busy": "1 while the single inference lane is running a model call (sampled at scrape).",
    "review_lane_busy_seconds": "Seconds the single inference lane spent in model calls; rate() is its utilisation.",
    "review_lane_skipped": "Work dropped at the lane before inference, by reason (gone, deadline).",
    "review_seat_holds": "Seats held on path 2 for refused clients told to come back (count as taken).",
    "review_seat_holds_issued": "Seat-Hold tokens given with a 429 on path 2.",
    "review_seat_hold_no_shows": "Held seats that expired unclaimed (each kept a seat for its grace window).",
    "review_seat_hold_results": "Seat-Hold tokens presented on path 2, by result (seated, forged, expired, used).",
    "review_knob_changes": "Knob changes the instructor made at runtime, by knob (app/knobs/board.py).",
    "review_knob_value": "The live value of each instructor knob, by knob, in its own unit.",
    "review_client_gone": "Requests withdrawn because their client disconnected while waiting, by path.",
}


class RequestTally:
    """Answers per (path, status), counted by LabMiddleware; one per app, read by the collector."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}

    def count(self, path: str, status: int) -> None:
        key = (path, str(status))
        with self._lock:
            self._counts[key] = self._counts.get(key, 0) + 1

    def snapshot(self) -> dict[tuple[str, str], int]:
        with self._lock:
            return dict(self._counts)
