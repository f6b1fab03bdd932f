"""`python -m app.serve [--host H --port P | --fd N]`: the one way to start the lab's server.

It is uvicorn with what uvicorn's command line cannot give: a deadline for each request and a
cap on open connections (app/door/connections.py), and a drain on SIGTERM (app/lab.py `Lab.drain`)
before uvicorn waits for open connections. Every limit comes from Settings (`LAB_*`).
"""

import argparse
import logging
import math
import resource
import socket
import sys

import uvicorn
from fastapi import FastAPI

from app.door.connections import ConnectionGuard
from app.door.protocol import GuardedWebSockets, HeadLimits, guarded
from app.knobs.instructor import TokenFileRefused, kept_token
from app.settings import Settings, get_settings

log = logging.getLogger("app.serve")
# What uvicorn and the websockets library log at INFO for each WebSocket: a live panel's accept, open and close,
# two or three lines per page (158 lines for 79 panels in a class, 2026-12-05), burying what the instructor
# must read. Warnings and errors about a connection still show.
PER_CONNECTION = frozenset(
    {
        '%s - "WebSocket %s" [accepted]',
        '%s - "WebSocket %s" 403',
        '%s - "WebSocket %s" %d',
        "connection open",
        "connection closed",
    }
)
# Descriptors the process needs besides client sockets: the model, the store and its pool,
# webhook clients, logs, the event loop: 22 at rest with sqlite (measured 2026-11-30); Redis'
# pool adds up to 64 and webhook deliveries 16.
FD_RESERVE = 128


def connections_that_fit(wanted: int) -> int:
    """Raise the soft open-file limit as far as the hard one allows; the connections that fit under it.

    Past the limit, accept() fails and nobody gets in, /health included: better to refuse or
    evict a connection than to lose the listener.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = wanted + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass
    if soft == resource.RLIM_INFINITY or soft >= need:
        return wanted
    fits = max(soft - FD_RESERVE, 1)
    log.warning("Open-file limit %d: serving at most %d connections (LAB_MAX_CONNECTIONS=%d).", soft, fits, wanted)
    return fits


class Quiet(logging.Filter):
    """The server's output, for whoever watches the box: never a line per WebSocket; inside the box, none of
    uvicorn's start-up lines (the supervisor says when the server is up, and where); and on a restart, nothing
    below an error until it serves (the start-up would repeat what the first start said, the supervisor says
    in one line that the box is back)."""

    def __init__(self, boxed: bool = False, restarted: bool = False) -> None:
        super().__init__()
        self.boxed = boxed
        self.restarted = restarted
        self.starting = True

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            return True
        if record.levelno < logging.WARNING and record.msg in PER_CONNECTION:
            return False
        if self.starting and self.restarted:
            return False
        return not (self.starting and self.boxed and record.name.startswith("uvicorn"))


def quiet_logging(settings: Settings) -> Quiet:
    """The filter on uvicorn's logger and on a handler for the lab's own lines (warnings and up, as before)."""
    state = settings.box_state
    quiet = Quiet(boxed=state is not None, restarted=state is not None and state.incarnation > 1)
    logging.getLogger("uvicorn.error").addFilter(quiet)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.addFilter(quiet)
    logging.getLogger().addHandler(handler)
    return quiet


class LabServer(uvicorn.Server):
    """uvicorn's server, which drains the lab before it waits for open connections."""

    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self._app = app
        self.quiet: Quiet | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.quiet is not None:
            self.quiet.starting = False  # serving: what it says from now on is news

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        lab = getattr(self._app.state, "lab", None)
        if lab is not None:
            lab.drain()
        await super().shutdown(sockets)


def server(app: FastAPI, settings: Settings, *, host: str, port: int, fd: int | None, log_level: str) -> LabServer:
    guard: ConnectionGuard = app.state.connections  # the app's, so its live routes count against the same bound
    guard.fit(connections_that_fit(settings.max_connections))
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        fd=fd,
        http=guarded(guard, HeadLimits.of(settings)),
        ws=GuardedWebSockets,
        # The live stats go to every page each tick: compressing the same text once per socket cost the
        # box ~5 % of a lone review with 300 pages open (docs/reliability.md); they are small and local.
        ws_per_message_deflate=False,
        lifespan="on",
        proxy_headers=False,  # the front's headers are read by app/door/forwarded.py, which also knows its Host
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=math.ceil(settings.shutdown_grace_s),
    )
    return LabServer(config, app)


def listening_socket(host: str, port: int) -> socket.socket:
    """Bound before the app is built, so a port in use is said in one line at once, not after loading the model."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    return sock


def main(argv: list[str] | None = None) -> None:
    settings = get_settings()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default=settings.host, help="default LAB_HOST (127.0.0.1)")
    parser.add_argument("--port", type=int, default=settings.port, help="default LAB_PORT (8000)")
    parser.add_argument("--fd", type=int, default=None, help="serve this listening socket instead (the box's)")
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    if settings.instructor_token_file is not None:  # said before the model loads, as a port in use is
        try:
            kept_token(settings.instructor_token_file)
        except TokenFileRefused as err:
            sys.exit(f"app.serve: {err}")
    sockets = None
    if args.fd is None:
        try:
            sockets = [listening_socket(args.host, args.port)]
        except OSError as err:
            sys.exit(f"app.serve: cannot listen on {args.host}:{args.port}: {err.strerror or err}.")
    from app.main import app  # built here, so --help needs no app

    lab_server = server(app, settings, host=args.host, port=args.port, fd=args.fd, log_level=args.log_level)
    lab_server.quiet = quiet_logging(settings)  # after uvicorn.Config, which configures uvicorn's loggers
    lab_server.run(sockets=sockets)


if __name__ == "__main__":
    main()
