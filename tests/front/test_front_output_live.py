"""What `just classroom` prints for the instructor, from a real start and a restart of the box (its server killed):
one block with the class's https address and the instructor page at that address, one line when the box is back
with both again, nothing per live panel, and no '?' where a number belongs.

The instructor reads this output during a class: the address must not drown under lines per live panel, the
instructor page must point at the address the class uses (never the box's plain port), and a number not known
yet must not print as '?'."""

import os
import re
import signal

import pytest
from websockets.sync.client import connect

from tests.front.classroom import classroom

pytestmark = pytest.mark.slow

PANELS = 6  # live panels opened and closed while the class runs


def test_a_class_start_and_a_restart_print_what_the_instructor_needs_and_nothing_per_panel() -> None:
    with classroom(LAB_BOX_SECONDS_PER_REVIEW="1") as room:  # a slowed box: its speed is set again on a restart
        room.wait_for("the class's address")
        for _ in range(PANELS):
            with connect(f"ws://127.0.0.1:{room.box_port}/api/stats/live", open_timeout=30) as panel:
                panel.recv(timeout=30)
        os.kill(room.server().pid, signal.SIGKILL)
        room.wait_for("The box is back")
        token = (room.state / "instructor-token").read_text().strip()
        out = room.output()
    url = f"https://localhost:{room.https_port}"
    page = f"{url}/instructor?token={token}"
    lines = out.splitlines()

    assert [line for line in lines if "the class's address" in line] == [
        f"classroom: {url}  the class's address (HTTPS, HTTP/2; self-signed: browsers warn once)"
    ]
    pages = [line for line in lines if "/instructor?token=" in line]
    assert len(pages) == 2 and all(page in line for line in pages), pages  # the block's, and the restart's
    assert f":{room.box_port}/instructor" not in out

    block = lines.index(next(line for line in lines if "the class's address" in line))
    assert lines[block - 1] == lines[block + 3] == "classroom: " + "-" * 72
    assert (
        lines[block + 1]
        == f"classroom: {page}  the instructor page (the knobs, for the whole lesson; keep it from students)"
    )

    died = next(i for i, line in enumerate(lines) if "The box died" in line)
    assert lines[died + 1] == f"The box is back (incarnation 2): {url} · instructor page {page}", lines[died:]

    assert not [
        line for line in lines if "WebSocket" in line or "connection open" in line or "connection closed" in line
    ]
    assert re.search(r"\?(?!token=)", out) is None, [line for line in lines if re.search(r"\?(?!token=)", line)]
