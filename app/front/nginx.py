"""The front's nginx: its config rendered from the committed template, its process started and checked.

nginx runs in the foreground under the launcher (it dies with it), with its pid file, log,
temporary files and config in the front's state folder, so a class, the tests and other
checkouts never share one. Nothing a setting holds reaches the config unchecked: ports are
numbers, paths are refused if they hold a quote, `$`, `;`, a brace or a control character,
and LAB_DOMAIN never appears in it at all (it is only in the certificate and the address).
"""

import json
import re
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.errors import FRONT_LIMIT, error_body

__all__ = ["FrontConfig", "nginx_binary", "render", "start_nginx", "validate"]

TEMPLATE = Path(__file__).with_name("nginx.conf")
SAFE_PATH = re.compile(r"^[^\"'\\$;{}\x00-\x1f\x7f]+$")
LIMIT_DETAIL = (
    "The classroom front refused: too many requests at once or too fast from you (or from your whole address or class),"
    " not the box being full; retry after Retry-After."
)


@dataclass(frozen=True)
class FrontConfig:
    https_port: int
    upstream: str  # host:port of the box, loopback
    state_dir: Path
    cert: Path
    key: Path
    ipv6: bool = False
    class_size: int = 40  # LAB_CLASS_SIZE: students behind one address


@dataclass(frozen=True)
class StudentLimits:
    """One student's share at the front (nginx.conf's `student_*` zones); an address gets `class_size` of them."""

    requests: int = 32  # at once (each HTTP/2 stream counts): a page's burst of 12 and its other requests
    live: int = 8  # WebSockets and event streams at once: a page opens one, its tickets' stream another
    rate_per_s: int = 20  # a loop of requests is refused...
    burst: int = 100  # ...but a page load (29 files) and a burst of 12 pass undelayed
    naive_per_min: int = 12  # ① after two bursts: a script looping ① would kill the box at every restart
    naive_burst: int = 24  # two page bursts of ① (each may kill the box: the lesson)


STUDENT = StudentLimits()
CLASS_REQUESTS = 500  # nginx.conf's class_requests: under the box's LAB_MAX_CONNECTIONS with the live sockets


def share(class_size: int) -> dict[str, str]:
    """The placeholders of one student's limits and of one address's: `class_size` students' (requests at
    once stop at the class's own ceiling)."""
    if not 1 <= class_size <= 500:
        raise ValueError(f"LAB_CLASS_SIZE={class_size} must be 1-500 students")
    s = STUDENT
    return {
        "@STUDENT_REQUESTS@": str(s.requests),
        "@STUDENT_LIVE@": str(s.live),
        "@STUDENT_RATE@": str(s.rate_per_s),
        "@STUDENT_BURST@": str(s.burst),
        "@STUDENT_NAIVE@": str(s.naive_per_min),
        "@STUDENT_NAIVE_BURST@": str(s.naive_burst),
        "@ADDRESS_REQUESTS@": str(min(class_size * s.requests, CLASS_REQUESTS)),
        "@ADDRESS_LIVE@": str(class_size * s.live),
        "@ADDRESS_RATE@": str(class_size * s.rate_per_s),
        "@ADDRESS_BURST@": str(class_size * s.burst),
        "@ADDRESS_NAIVE@": str(class_size * s.naive_per_min),
        "@ADDRESS_NAIVE_BURST@": str(class_size * s.naive_burst),
        "@CLASS_SIZE@": str(class_size),
    }


def nginx_binary() -> str:
    """Debian's nginx (`just classroom` and `just setup` install it); /usr/sbin is not on every user's PATH."""
    found = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise FileNotFoundError("nginx is missing: `just setup` installs Debian's package")
    return found


def ipv6_here() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def checked_path(path: Path) -> str:
    text = str(path.resolve())
    if not SAFE_PATH.match(text):
        raise ValueError(f"{text!r} cannot go into the front's config (quote, $, ;, brace or control character)")
    return text


def render(config: FrontConfig) -> str:
    """The template with every placeholder filled, or ValueError for a value that cannot go in."""
    if not 1 <= config.https_port <= 65535:
        raise ValueError(f"LAB_HTTPS_PORT={config.https_port} is not a port (1-65535)")
    host, _, port = config.upstream.rpartition(":")
    if not re.fullmatch(r"[0-9.]+|\[[0-9a-fA-F:]+\]", host) or not port.isdigit():
        raise ValueError(f"the box's address {config.upstream!r} must be an IP literal and a port")
    body = json.dumps(error_body(FRONT_LIMIT, LIMIT_DETAIL), ensure_ascii=True)
    if set(body) & {"'", "\\", "$"}:  # nginx would unescape or interpolate them in a quoted string
        raise ValueError("the front's refusal body must hold no quote, backslash or $")
    listen6 = f"        listen [::]:{config.https_port} ssl http2 ipv6only=on;" if config.ipv6 else ""
    values = {
        "@STATE@": checked_path(config.state_dir),
        "@PORT@": str(config.https_port),
        "@LISTEN6@": listen6,
        "@CERT@": checked_path(config.cert),
        "@KEY@": checked_path(config.key),
        "@UPSTREAM@": config.upstream,
        "@LIMIT_BODY@": body,
        **share(config.class_size),
    }
    text = TEMPLATE.read_text(encoding="utf-8")
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def write(config: FrontConfig) -> Path:
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (config.state_dir / "tmp" / sub).mkdir(parents=True, exist_ok=True)
    path = config.state_dir / "nginx.conf"
    path.write_text(render(config), encoding="utf-8")
    return path


def validate(config: FrontConfig) -> str:
    """`nginx -t` on the rendered config: '' when nginx accepts it, else what it said."""
    path = write(config)
    argv = [nginx_binary(), "-t", "-q", "-p", str(config.state_dir), "-e", str(config.state_dir / "error.log")]
    result = subprocess.run([*argv, "-c", str(path)], capture_output=True, text=True, timeout=30, check=False)
    return "" if result.returncode == 0 else (result.stderr or result.stdout).strip()


def start_nginx(config: FrontConfig, preexec: Callable[[], None] | None = None) -> "subprocess.Popen[bytes]":
    """nginx in the foreground on the rendered config; its messages go to the state folder's error.log.

    In a process group of its own that its master leads: its worker stays in it even if the master is
    killed, so stopping the group stops both (app/front/children.py `stop_group`)."""
    path = write(config)
    argv = [nginx_binary(), "-p", str(config.state_dir), "-e", str(config.state_dir / "error.log"), "-c", str(path)]
    with (config.state_dir / "error.log").open("ab") as log:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, preexec_fn=preexec, process_group=0)
