"""Prometheus metrics, all prefixed `review_`, in base units, with bounded labels only.

Labels: `path` is one of naive|limited|batched|tickets; `reason` and `status` come from
small fixed sets. Nothing per request or per client ever becomes a label.
"""

from prometheus_client import Counter, Gauge, Histogram

from app.jobs.models import JobStatus

PATHS = ("naive", "limited", "batched", "tickets")

REQUESTS = Counter(
    "review_requests_total", "Prediction requests answered, by path and HTTP status.", ["path", "status"]
)
IN_FLIGHT = Gauge("review_in_flight", "Requests being inferred right now (처리 중), by path.", ["path"])
WAITING = Gauge("review_waiting", "Requests or jobs admitted and waiting for the lane (대기), by path.", ["path"])
REJECTIONS = Counter(
    "review_rejections_total",
    "Requests refused, by path and reason (seats_full, waited_too_long, job_queue_full).",
    ["path", "reason"],
)
WAIT_SECONDS = Histogram(
    "review_wait_seconds",
    "Time from arrival to the start of inference, by path.",
    ["path"],
    buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
INFERENCE_SECONDS = Histogram(
    "review_inference_seconds",
    "Time one inference call took on the model, by path.",
    ["path"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 8, 13, 20),
)
BATCH_SIZE = Histogram("review_batch_size", "Reviews per batch on the batched path.", buckets=(1, 2, 3, 4, 5, 6, 7, 8))
BATCHES_CLOSED = Counter("review_batches_total", "Batches sent to the lane, by why (full|timer|lane_free).", ["reason"])
JOBS = Gauge("review_jobs", "Ticket jobs known to this process, by status.", ["status"])
CACHE_HITS = Counter("review_cache_hits_total", "Predictions answered from the result cache, by path.", ["path"])
LANE_BUSY = Gauge("review_lane_busy", "1 while the single inference lane is running a model call.")
LANE_SKIPPED = Counter(
    "review_lane_skipped_total", "Work dropped at the lane before inference, by reason (gone, deadline).", ["reason"]
)
CLIENT_GONE = Counter(
    "review_client_gone_total", "Requests withdrawn because their client disconnected while waiting, by path.", ["path"]
)

# The answers each path is built to give, and the reasons it may refuse. Every such series
# is created at 0 at import: Prometheus' rate() cannot see the increments that happened
# before a series' first scrape, so a lazily created 429 counter would hide the first burst.
EXPECTED_STATUSES = {
    "naive": ("200",),
    "limited": ("200", "429", "503"),
    "batched": ("200",),
    "tickets": ("202", "429"),
}
REJECTION_REASONS = {"limited": ("seats_full", "waited_too_long"), "tickets": ("job_queue_full",)}
BATCH_CLOSE_REASONS = ("full", "timer", "lane_free")
LANE_SKIP_REASONS = ("gone", "deadline")

for _path in PATHS:
    IN_FLIGHT.labels(_path)
    WAITING.labels(_path)
    WAIT_SECONDS.labels(_path)
    INFERENCE_SECONDS.labels(_path)
    CACHE_HITS.labels(_path)
    for _status in EXPECTED_STATUSES[_path]:
        REQUESTS.labels(_path, _status)
    for _reason in REJECTION_REASONS.get(_path, ()):
        REJECTIONS.labels(_path, _reason)
for _reason in BATCH_CLOSE_REASONS:
    BATCHES_CLOSED.labels(_reason)
for _reason in LANE_SKIP_REASONS:
    LANE_SKIPPED.labels(_reason)
for _job_status in JobStatus:
    JOBS.labels(_job_status.value)
