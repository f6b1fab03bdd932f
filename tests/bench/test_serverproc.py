"""A benchmark's box leaves no cgroup behind: the leftovers of a supervisor are found by its name, per controller;
the one "wait until the box answers" waits for a 200, not for any answer; a free port stays free."""

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from kit import serverproc
from kit.live import TINY_MODEL
from kit.measure import PeakRss
from kit.serverproc import ServerProcess, box_groups, wait_healthy

V1 = "12:memory:/user.slice\n7:cpu,cpuacct:/user.slice\n3:cpuset:/\n1:name=systemd:/user.slice\n"
V2 = "0::/lab.slice\n"


def test_v1_leftovers_are_found_in_each_controller_that_still_has_the_group(tmp_path: Path) -> None:
    (tmp_path / "memory" / "user.slice" / "lab-box-4242").mkdir(parents=True)
    (tmp_path / "cpuset" / "lab-box-4242").mkdir(parents=True)
    (tmp_path / "cpu" / "user.slice" / "lab-box-999").mkdir(parents=True)  # another supervisor's: not ours
    group = box_groups(4242, V1, tmp_path)
    assert group is not None and group.version == 1
    assert group.dirs == {
        "memory": tmp_path / "memory" / "user.slice" / "lab-box-4242",
        "cpuset": tmp_path / "cpuset" / "lab-box-4242",
    }


def test_v2_leftover_is_the_one_unified_folder(tmp_path: Path) -> None:
    (tmp_path / "lab.slice" / "lab-box-7").mkdir(parents=True)
    group = box_groups(7, V2, tmp_path)
    assert group is not None and group.version == 2
    assert group.folders() == [tmp_path / "lab.slice" / "lab-box-7"]


def test_nothing_left_means_nothing_to_remove(tmp_path: Path) -> None:
    (tmp_path / "memory" / "user.slice").mkdir(parents=True)
    assert box_groups(4242, V1, tmp_path) is None
    assert box_groups(7, V2, tmp_path) is None


def test_peak_rss_follows_the_pids_it_is_given_each_time() -> None:
    """In the box the server is replaced after a death: the sampler asks for the pids on every sample."""
    asked = threading.Event()

    def pids() -> list[int]:
        asked.set()
        return [os.getpid(), 2**22 + 17]  # a pid that does not exist is skipped, not fatal

    with PeakRss(pids, every_s=0.001) as rss:
        asked.wait(timeout=10)
    assert asked.is_set()
    assert rss.peak > 0


@contextmanager
def box_down_for(refusals: int) -> Iterator[tuple[str, list[str]]]:
    """A box behind a front: 502 for its first `refusals` requests (the box restarting), then 200; every path asked."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(502 if len(asked) <= refusals else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", asked
    finally:
        server.shutdown()
        server.server_close()


def test_waiting_for_the_box_takes_a_200_not_the_fronts_502() -> None:
    with box_down_for(refusals=3) as (url, asked):
        waited_s = wait_healthy(url, limit_s=60)
    assert asked == ["/health"] * 4 and waited_s >= 0


def test_waiting_for_a_box_that_never_answers_200_gives_up() -> None:
    with box_down_for(refusals=10**6) as (url, _), pytest.raises(TimeoutError):
        wait_healthy(url, limit_s=0.3)


def test_waiting_for_a_server_whose_process_died_fails_at_once() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait(timeout=60)
    with pytest.raises(RuntimeError, match="exited with 3"):
        wait_healthy("http://127.0.0.1:9", process, limit_s=60)


@pytest.mark.slow
def test_a_box_server_serves_from_a_child_and_leaves_no_group_behind() -> None:
    """The supervisor's pid is not the server's: memory is read from its children; its groups go with it."""
    with ServerProcess(TINY_MODEL, box=True, LAB_BOX_SECONDS_PER_REVIEW="0.05") as server:
        assert httpx.get(f"{server.url}/api/model", timeout=10).json()["box"]["boxed"] is True
        served_by = server.server_pids()
        assert served_by and server.pid not in served_by
        supervisor = server.pid
    assert box_groups(supervisor) is None


def test_a_free_port_is_below_the_ephemeral_range_where_no_client_socket_can_take_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port from bind(0) is one an outgoing connection (another worker's test client) may take as its local
    port before the server binds it: a class start failed so ("Port … is taken")."""
    monkeypatch.setattr(serverproc, "EPHEMERAL", tmp_path / "range")
    (tmp_path / "range").write_text("32768\t60999\n")
    ports = {serverproc.free_port() for _ in range(20)}
    assert all(serverproc.LOWEST_PORT <= port < 32768 for port in ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports.pop()))  # and free: it binds
    (tmp_path / "range").write_text("1024\t65535\n")  # no room below the range: the kernel's pick
    assert 1024 <= serverproc.free_port() <= 65535
