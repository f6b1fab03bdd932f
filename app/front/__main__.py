"""`python -m app.front` (`just classroom`): the box on its plain port, Caddy's HTTPS/HTTP2 front before it.

Both run until Ctrl-C or SIGTERM (forwarded once to each: the box drains, Caddy stops) or until
either exits on its own, which stops the other: a class never sees a front without a box behind it
or a box it cannot reach.
"""

import logging
import signal
import subprocess
import sys
import time
from types import FrameType

from app.bench.serverproc import stop_process
from app.front.caddy import front_url, start_caddy, wait_front
from app.settings import PROJECT_ROOT, Settings

log = logging.getLogger("app.front")


def start_box(settings: Settings) -> "subprocess.Popen[bytes]":
    argv = [sys.executable, "-m", "app.box", "--host", settings.host, "--port", str(settings.port)]
    return subprocess.Popen(argv, cwd=PROJECT_ROOT, start_new_session=True)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="classroom: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # the readiness polls are not news
    settings = Settings()
    upstream_host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    upstream = f"{upstream_host}:{settings.port}"
    url = front_url(settings.domain, settings.https_port)
    state_dir = settings.front_state_dir
    caddy = start_caddy(domain=settings.domain, https_port=settings.https_port, upstream=upstream, state_dir=state_dir)
    stopping = False

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        wait_front(url, caddy)
    except RuntimeError as error:
        log.error("The front did not start (%s); see %s", error, state_dir / "caddy.log")
        return 1
    except TimeoutError:  # a public domain's first certificate can take longer: Caddy keeps trying
        log.warning("%s does not answer yet (a certificate being obtained?); see %s", url, state_dir / "caddy.log")
    log.info("%s  the class's address (HTTPS, HTTP/2) -> the box at http://%s", url, upstream)
    log.info("Caddy's own CA signs localhost and LAN names: browsers warn once; log: %s", state_dir / "caddy.log")
    box = start_box(settings)
    while not stopping and box.poll() is None and caddy.poll() is None:
        time.sleep(0.2)
    if caddy.poll() is not None and not stopping:
        log.error("Caddy exited with %s; stopping the box. See %s", caddy.returncode, state_dir / "caddy.log")
    stop_process(box, limit_s=60)
    stop_process(caddy, limit_s=10)
    return 0 if stopping else 1


if __name__ == "__main__":
    sys.exit(main())
