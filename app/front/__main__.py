"""`python -m app.front` (`just classroom`): the box on its plain port, nginx's HTTPS/HTTP2 front before it.

Before anything starts: LAB_DOMAIN must be a host name or an IP address; the lab's own nginx that a killed
front left running is stopped (by its pid file, app/front/children.py), then both ports must be free (a
taken one is named with the process holding it, never killed); the instructor's token file is checked (a
file that is not one stops the start, app/knobs/instructor.py); the certificate is made and nginx's config
checked. The class's address and the instructor page, both at the class's https address, are printed as
one block only once the front answers /health from the box and the page has been fetched once through it,
so the first student's load is as fast as the later ones; after each restart of the box, the box says
both again in one line (LAB_CLASS_URL). Both children die with this process, even by kill -9
(PR_SET_PDEATHSIG); Ctrl-C or SIGTERM is forwarded once to each (the box drains, nginx's whole process
group stops); either exiting on its own stops the other, nginx's worker included.
"""

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from app.box.launch import stop_process
from app.front.children import bound_to, stop_group, stop_leftover_nginx
from app.front.domain import checked_domain
from app.front.nginx import FrontConfig, ipv6_here, start_nginx, validate
from app.front.ports import holder, taken
from app.front.ready import front_url, wait_ready, warm
from app.front.refusals import Refusals
from app.front.tls import certificate
from app.knobs.instructor import TOKEN_FILE, TokenFileRefused, lesson_token
from app.settings import PROJECT_ROOT, Settings

log = logging.getLogger("app.front")
REFUSALS_EVERY_S = 60.0  # how often the instructor is told how many the front itself refused


def start_box(settings: Settings, token_file: Path, url: str) -> "subprocess.Popen[bytes]":
    """The box, told the token file the front read (so both speak of one token) and the class's address."""
    argv = [sys.executable, "-m", "app.box", "--host", settings.host, "--port", str(settings.port)]
    env = {**os.environ, "LAB_INSTRUCTOR_TOKEN_FILE": str(token_file), "LAB_CLASS_URL": url}
    return subprocess.Popen(argv, cwd=PROJECT_ROOT, env=env, start_new_session=True, preexec_fn=bound_to(os.getpid()))


def taken_port(settings: Settings, ipv6: bool) -> str:
    """One line naming the first taken port and its holder, or ''."""
    wanted = [("0.0.0.0", settings.https_port, "LAB_HTTPS_PORT"), (settings.host, settings.port, "LAB_PORT")]
    if ipv6:
        wanted.insert(1, ("::", settings.https_port, "LAB_HTTPS_PORT"))
    for host, port, setting in wanted:
        if taken(host, port):
            return f"Port {port} is taken by {holder(port)}: stop it, or choose another port with {setting}."
    return ""


def prepared(settings: Settings) -> FrontConfig | str:
    """The front's config with its certificate, or one line saying why it cannot start."""
    try:
        domain = checked_domain(settings.domain)
    except ValueError as err:
        return f"{err}."
    for stopped in stop_leftover_nginx(settings.front_state_dir):
        log.warning("Stopped the lab's nginx that a killed front left running: %s.", stopped)
    ipv6 = ipv6_here()
    busy = taken_port(settings, ipv6)
    if busy:
        return busy
    state_dir = settings.front_state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    if (settings.front_cert is None) != (settings.front_key is None):
        return "Set both LAB_FRONT_CERT and LAB_FRONT_KEY (a public domain's certificate and key), or neither."
    try:
        cert, key = settings.front_cert, settings.front_key
        if cert is None or key is None:
            cert, key = certificate(domain, state_dir / "tls")
        upstream_host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
        upstream = f"[{upstream_host}]:{settings.port}" if ":" in upstream_host else f"{upstream_host}:{settings.port}"
        config = FrontConfig(settings.https_port, upstream, state_dir, cert, key, ipv6, settings.class_size)
        complaint = validate(config)
    except (OSError, ValueError, subprocess.SubprocessError) as err:
        return f"The front cannot be prepared: {err}."
    return f"nginx refuses the front's config: {complaint}" if complaint else config


def class_token(settings: Settings, state_dir: Path) -> tuple[Path, str] | str:
    """The instructor token file the box will read and its token (in the front's folder if the file cannot be
    created), or one line saying why the start stops."""
    try:
        return lesson_token(settings.instructor_token_file or TOKEN_FILE, state_dir)
    except TokenFileRefused as err:
        return str(err)


def ready_block(url: str, token: str, config: FrontConfig, self_signed: bool) -> list[str]:
    """What the instructor reads once the class can come in: the class's address and the instructor page, both
    at the address the class uses, framed so they stand out of the start-up lines above."""
    warning = "self-signed: browsers warn once" if self_signed else "its own certificate"
    rule = "-" * 72
    lines = [rule, f"{url}  the class's address (HTTPS, HTTP/2; {warning})"]
    if token:
        why = "the knobs, for the whole lesson; keep it from students"
        lines.append(f"{url}/instructor?token={token}  the instructor page ({why})")
    else:
        lines.append("No instructor page: the token could not be kept (the line above says why).")
    lines += [f"Behind it: the box at http://{config.upstream}; nginx's log in {config.state_dir}", rule]
    return lines


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="classroom: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the readiness polls are not news
    settings = Settings()
    config = prepared(settings)
    if isinstance(config, str):
        log.error("%s", config)
        return 2
    url = front_url(checked_domain(settings.domain), settings.https_port)
    local = front_url("127.0.0.1", settings.https_port)  # what this machine asks, whatever name the class uses
    lesson = class_token(settings, config.state_dir)
    if isinstance(lesson, str):
        log.error("%s", lesson)
        return 2
    token_file, token = lesson
    stopping = False

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    box = start_box(settings, token_file, url)
    proxy = start_nginx(config, preexec=bound_to(os.getpid()))
    log.info("Starting the box and the front (the box loads its model: about a minute)…")
    if wait_ready(local, [box, proxy], lambda: stopping):
        warm(local)
        for line in ready_block(url, token, config, settings.front_cert is None):
            log.info("%s", line)
    refusals, said_at = Refusals(config.state_dir / "front-refusals.log"), time.monotonic()
    while not stopping and box.poll() is None and proxy.poll() is None:
        time.sleep(0.2)
        if time.monotonic() - said_at >= REFUSALS_EVERY_S:
            said_at = time.monotonic()
            line = Refusals.said(refusals.since_last(), REFUSALS_EVERY_S / 60)
            if line:
                log.info("%s", line)
    if proxy.poll() is not None and not stopping:
        log.error("nginx exited with %s; stopping the box. See %s", proxy.returncode, config.state_dir / "error.log")
    stop_group(proxy, limit_s=10)  # its worker too, even when its master was killed
    stop_process(box, limit_s=60)
    return 0 if stopping else 1


if __name__ == "__main__":
    sys.exit(main())
