"""Every knob of the lab in one place, read from `LAB_*` environment variables."""

from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_settings import BaseSettings, SettingsConfigDict

PROJECT_ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = PROJECT_ROOT / "models"
REAL_MODEL_DIR = MODELS_DIR / "bge-reranker-base-int8"
TWIN_MODEL_DIR = MODELS_DIR / "bge-reranker-base-twin-int8"
MEMORY_CAP_BYTES = int(1.2 * 2**30)  # the box's memory: the cap `just serve` enforces and benchmarks measure against


@dataclass(frozen=True, slots=True)
class StandIn:
    """What the box holds for the seed's libraries and for what, as measured (date, host, versions); whether here."""

    bytes: int
    stands_for: str
    measured: str
    measured_here: bool = False
    origin: str = ""  # "measured here (…)" or "the committed figure from <host, date>"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class BoxState(BaseModel):
    """What the supervisor tells each server it starts: who it is, how it is boxed, how its predecessor died.

    Passed as JSON in `LAB_BOX_STATE`, one setting among the others, so it lives here and settings imports
    nothing of the box; `None` in Settings means the server runs outside the box.
    """

    # 1 for the first server, +1 after each restart.
    incarnation: int = 1
    deaths: int = 0
    # Deaths attributed to the memory cap (the OOM killer or the watchdog).
    memory_deaths: int = 0
    # "memory_cap", "signal 9", "exit 1", ...; None before the first death.
    last_death_cause: str | None = None
    last_death_detail: str | None = None
    # Unix time of the last death (wall clock, so a person can read it).
    last_death_at: float | None = None
    # The dead incarnation's highest memory (its group's peak, or what the watchdog killed it at); None: not known.
    last_death_peak_bytes: int | None = None
    # Cores the server may run on; empty means no limit.
    cpus: list[int] = []
    # How the cores are enforced: cgroup | affinity | not enforced (why).
    cpu_mode: str = "not enforced"
    memory_cap_bytes: int = 0
    # How the cap is enforced: cgroup | watchdog (emulation) | not enforced (why).
    memory_mode: str = "not enforced"
    # The server's own cpu cgroup folder, where calibration writes the CPU quota; None: burn CPU instead.
    cpu_quota_dir: str | None = None
    # The box's memory cgroup folder: /api/stats shows what it charges against the cap; None: RSS.
    memory_dir: str | None = None
    # Bytes the server holds for the seed's server's libraries (app/inside/stand_in.py); 0: none.
    stand_in_bytes: int = 0
    # The figure it holds and where it came from (this host's measurement or the committed one); None: not chosen.
    stand_in: StandIn | None = None
    # Where the speed loop keeps its current setting, so the next incarnation starts from it (app/inside/speed.py).
    speed_file: str | None = None


class Settings(BaseSettings):
    """Lab settings in base units; `Settings(limited_seats=2)` overrides one in a test."""

    model_config = SettingsConfigDict(env_prefix="LAB_", extra="ignore")

    # The model folder to serve; empty means "the real model if prepared, else the twin".
    model_dir: Path | None = None
    topics_file: Path = PROJECT_ROOT / "app" / "data" / "topics.json"
    samples_file: Path = PROJECT_ROOT / "app" / "data" / "sample_reviews.json"
    intra_op_threads: int = 1
    max_tokens: int = 512
    # Pairs per model call, sorted by length; 0 pads a whole batch to its longest pair. Unset: the
    # fastest shape measured on this host for this model (app/engine/callshape.py, cached beside the model).
    pair_chunk: int | None = None
    # One inference at start-up, so the service clock starts from a measurement.
    warmup: bool = True

    # Path 2: one inference in flight plus this many waiting seats.
    limited_seats: int = 4
    limited_max_wait_s: float = 15.0
    # A 429 from path 2 holds a seat for its client (a Seat-Hold token) for when its Retry-After says; a
    # returner up to this long late still goes first for the next seat (0 = no holds: a refusal promises nothing).
    limited_hold_grace_s: float = 3.0
    # Holds are promised only for seats that free before this many more reviews end (15 s on a 1 s box, and
    # as many holds on a slower host); past it a 429 carries only its Retry-After.
    limited_hold_horizon_reviews: int = 15

    # Path 3: gather for this long after the first arrival, or until this many.
    batch_window_s: float = 0.025
    batch_max: int = 8
    # Refuse (429) a newcomer whose predicted wait is longer than this; 0 admits everyone.
    batch_max_wait_s: float = 0.0

    # Path 5 (beyond the handout, docs/adaptive.md): a newcomer is promised a start within the target once the
    # queue stands, within the drain bound while it drains (at the measured seconds per review), and an answer
    # within that plus its own review. The queue stands when newcomers found more than the target ahead for a
    # whole interval, or one was refused; a crowd's first moment lasts one target. 1.0 is the point chosen on
    # the frontier of work against p95 (docs/adaptive.md): 1.5 served more work with a p95 past 3 reviews.
    adaptive_target_reviews: float = 1.0
    # While the queue drains: Poisson arrivals at half the lane's capacity overlap by chance, and 3 reviews took
    # them all on 2026-12-05 (2 refused 5 of 45).
    adaptive_drain_reviews: float = 3.0
    adaptive_interval_reviews: float = 6.0

    # Path 4: tickets waiting beyond this are refused with 429.
    queue_max_jobs: int = 20
    # Where tickets live: memory:// (lost on restart), sqlite:///data/jobs.db (relative to
    # the project root; sqlite:////abs/path.db), or redis://127.0.0.1:6379/0?prefix=lab:jobs.
    job_store: str = "sqlite:///data/jobs.db"
    jobs_keep_s: float = 3600.0
    # A running job's owner renews its lease; a box that dies loses its jobs after this.
    job_lease_s: float = 10.0
    # Claims per job, a run lost to a crash included; then the job ends failed.
    job_max_attempts: int = 3
    # Backoff before a retry: this, doubled per attempt, capped at 60 s.
    job_retry_backoff_s: float = 1.0
    # A job still queued after this expires without reaching the model; a request may ask
    # for between 1 s and the cap.
    job_max_time_in_queue_s: float = 600.0
    job_max_time_in_queue_cap_s: float = 3600.0
    # How often an idle worker and an event stream look at a store other boxes share.
    job_poll_s: float = 0.25
    # Webhooks (Standard Webhooks): secret as `whsec_<base64>`; unset refuses webhook_url.
    webhook_secret: str | None = None
    webhook_max_attempts: int = 5
    webhook_retry_backoff_s: float = 1.0
    webhook_timeout_s: float = 5.0
    # Lets webhooks reach loopback/private addresses (tests; never on a shared box).
    webhook_allow_private: bool = False

    # The box (`python -m app.box`, what `just serve` runs): the server's cores (0 = no limit).
    cpus: int = 1
    # The CPU is slowed until the median sample review costs this long (0 = the host's own speed).
    box_seconds_per_review: float = 1.0
    # Let the box create cgroups where it can; false forces the fallbacks (affinity, CPU burning, watchdog).
    box_cgroups: bool = True
    # Slow the CPU to box_seconds_per_review in this server. The box turns it on; a bare
    # uvicorn (tests) stays at the host's speed unless it asks.
    box_slow: bool = False
    # The box holds what the seed's server held at rest beyond the lab's own (app/inside/stand_in.py: its
    # libraries, measured in app/data/seed_server.json), so ① meets the cap where the seed's box did.
    box_stand_in: bool = True
    # Set by the box for the server it starts (LAB_BOX_STATE, JSON); None outside the box.
    box_state: BoxState | None = None

    # How onnxruntime keeps activation memory between calls: arena | shrink | no_arena
    # (docs/box.md, "Memory given back"), and whether start-up and the end of every crowd, on any path,
    # hand the freed heap back to the kernel (glibc malloc_trim; app/memory/give_back.py).
    memory_arena: Literal["arena", "shrink", "no_arena"] = "shrink"
    memory_trim: bool = True

    # Path 1 guard, off by default so the lesson stays visible: refuse (503) a naive request
    # when current RSS plus one inference's measured memory would pass the cap.
    naive_memory_guard: bool = False
    # The box's memory cap, enforced by a cgroup or a watchdog (0 = none); the guard's cap too.
    memory_cap_bytes: int = MEMORY_CAP_BYTES

    # Where the instructor's knob changes are kept, so a restart keeps them (None: not kept). The box
    # (`just serve`) sets data/knobs.json for its server; a bare server keeps nothing unless asked.
    knobs_file: Path | None = None
    # Where the instructor's token is kept (mode 0600), so the address printed at start-up works after every
    # death and restart (app/knobs/instructor.py). The box draws it once into data/instructor-token unless this names
    # another file, and hands it to each server; a server without one draws its own token at start-up.
    instructor_token_file: Path | None = None
    # The class view (/class, docs/classroom.md): every path request of the lesson, kept for the instructor.
    # Off: nothing is recorded (the benchmark's baseline, bench/classview.py). The file keeps the record across
    # the box's deaths; the box sets one in its own state folder (removed when the box stops) unless this names
    # another; a bare server keeps it in memory only unless asked.
    lesson_record: bool = True
    lesson_file: Path | None = None
    # Kept: the last this many requests, and none older than this (the lesson's record is bounded).
    lesson_max_requests: int = 20_000
    lesson_max_age_s: float = 7200.0

    cache_size: int = 1024
    cache_ttl_s: float = 600.0

    max_text_chars: int = 2000
    max_body_bytes: int = 16_384

    # The server (`python -m app.serve`): where it listens when no --host/--port/--fd is given,
    # and how long SIGTERM lets seated and running work finish before cutting it.
    host: str = "127.0.0.1"
    port: int = 8000
    shutdown_grace_s: float = 30.0
    # A connection must deliver a whole request (headers and body) within this many seconds of
    # opening or of its previous answer, else it is closed (slow or silent clients).
    request_timeout_s: float = 10.0
    # The classroom front (`just classroom`, app/front): nginx terminates HTTPS and speaks HTTP/2 on
    # this port, in front of the box's plain host/port. LAB_DOMAIN is the host name or IP address the
    # class types (checked: nothing else), the name on the certificate.
    https_port: int = 8443
    domain: str = "localhost"
    # The front's certificate for LAB_DOMAIN, its config, pid file and log (created on first use; data/ is
    # not committed).
    front_state_dir: Path = PROJECT_ROOT / "data" / "front"
    # A public domain's real certificate and key (e.g. certbot's fullchain.pem and privkey.pem); without
    # them the front makes a self-signed one for LAB_DOMAIN (browsers warn once).
    front_cert: Path | None = None
    front_key: Path | None = None
    # Students behind one address (a school's NAT) whom the front still serves as students: its per-address
    # ceilings are this many students' limits (docs/classroom.md, "Behind one school address").
    class_size: int = 40
    # The one address whose X-Forwarded-Proto/-Host/-For the box believes: the front's (it reaches the box
    # over loopback). Anyone else's are ignored, so nobody can make the page show another address.
    trusted_proxy: str = "127.0.0.1"
    # The class's address (https://…), set by `just classroom` for the box it starts: the box names it, not its
    # own plain port, in the line it prints after each restart, and leaves the start-up block to the front.
    class_url: str = ""
    # Open client connections at most (lowered to fit the open-file limit); at the cap the
    # oldest connection still owing a request is closed to make room.
    max_connections: int = 1000
    # WebSockets and event streams served at once, at most half of max_connections (after it is
    # lowered), so the other half always takes requests; past it a WebSocket is closed with 1013.
    max_live_connections: int = 500
    # A request's head: the request line, then the header fields (count and bytes: name + value).
    # nginx's request line and h11's whole head are 8 KiB and 16 KiB by default; Apache allows 100 fields.
    max_request_line_bytes: int = 8192
    max_header_bytes: int = 16_384
    max_header_count: int = 100
    # After an early answer (413, 431) the rest of what the client sends is read and thrown away,
    # up to this many bytes or seconds, so it reads the answer instead of a reset (nginx's lingering close).
    linger_bytes: int = 4 * 2**20
    linger_s: float = 5.0

    def resolved_model_dir(self) -> Path:
        """The folder to serve: explicit setting first, then real weights, then the twin."""
        if self.model_dir is not None:
            return self.model_dir
        if (REAL_MODEL_DIR / "model.onnx").exists():
            return REAL_MODEL_DIR
        return TWIN_MODEL_DIR


@lru_cache
def get_settings() -> Settings:
    return Settings()
