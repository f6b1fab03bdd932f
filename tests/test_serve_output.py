"""What the server prints (app/serve.py `Quiet`): nothing per WebSocket; inside the box none of uvicorn's start-up
lines; on a restart nothing below an error until it serves; errors always. The live check is
tests/front/test_front_output_live.py."""

import logging

import pytest

from app.serve import Quiet


def record(name: str, level: int, msg: str, *args: object) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


ACCEPTED = record("uvicorn.error", logging.INFO, '%s - "WebSocket %s" [accepted]', "127.0.0.1:5", "/api/stats/live")
OPENED = record("uvicorn.error", logging.INFO, "connection open")
CLOSED = record("uvicorn.error", logging.INFO, "connection closed")
STARTED = record("uvicorn.error", logging.INFO, "Started server process [%d]", 12)
RUNNING = record("uvicorn.error", logging.INFO, "Uvicorn running on socket %s (Press CTRL+C to quit)", ("x", 1))
SPEED = record("app.inside.calibrate", logging.WARNING, "Box speed: first guess reused (burn), …")
FAILED_WS = record("uvicorn.error", logging.ERROR, "Exception in ASGI application\n")
SLOW_WS = record("uvicorn.error", logging.WARNING, "connection open")  # a warning about a connection still shows


def shown(quiet: Quiet, *records: logging.LogRecord) -> list[str]:
    return [r.getMessage() for r in records if quiet.filter(r)]


@pytest.mark.parametrize("starting", [True, False])
@pytest.mark.parametrize(("boxed", "restarted"), [(False, False), (True, False), (True, True)])
def test_a_live_panel_costs_no_line(boxed: bool, restarted: bool, starting: bool) -> None:
    quiet = Quiet(boxed=boxed, restarted=restarted)
    quiet.starting = starting
    assert shown(quiet, ACCEPTED, OPENED, CLOSED) == []
    assert shown(quiet, FAILED_WS) == [FAILED_WS.getMessage()]


def test_a_bare_server_says_what_uvicorn_says() -> None:
    quiet = Quiet()
    assert shown(quiet, STARTED, RUNNING, SPEED, SLOW_WS) == [
        "Started server process [12]",
        "Uvicorn running on socket ('x', 1) (Press CTRL+C to quit)",
        SPEED.getMessage(),
        "connection open",
    ]


def test_inside_the_box_uvicorns_start_up_lines_are_left_to_the_supervisor() -> None:
    quiet = Quiet(boxed=True)
    assert shown(quiet, STARTED, RUNNING, SPEED) == [SPEED.getMessage()]
    quiet.starting = False
    assert shown(quiet, SPEED, SLOW_WS) == [SPEED.getMessage(), "connection open"]


def test_a_restart_says_only_errors_until_it_serves() -> None:
    quiet = Quiet(boxed=True, restarted=True)
    assert shown(quiet, STARTED, RUNNING, SPEED, SLOW_WS, FAILED_WS) == [FAILED_WS.getMessage()]
    quiet.starting = False
    assert shown(quiet, SPEED, FAILED_WS) == [SPEED.getMessage(), FAILED_WS.getMessage()]
