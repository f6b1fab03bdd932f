"""When the front may print its address: it answers /health from the box, and the page has been fetched once.

The first load after start-up once took 13 s (the address was printed before the box had loaded
its model, and the page's first fetch paid for what the box does once). Warming fetches the page
and every file it links through the front, as a browser would, before anyone is told the address.
"""

import re
import subprocess
import time
from collections.abc import Callable, Sequence

import httpx

__all__ = ["front_url", "wait_ready", "warm"]

LINKED = re.compile(r"""(?:src|href)="(/[^"#?]*)""")
IMPORTED = re.compile(r'(?:from|import)\s+"\./([^"]+\.js)"')
STATIC = re.compile(r'"(/static/[^"]+)"')  # files a script fetches itself (a figure's data)


def front_url(domain: str, https_port: int) -> str:
    host = f"[{domain}]" if ":" in domain else domain
    return f"https://{host}" if https_port == 443 else f"https://{host}:{https_port}"


def wait_ready(url: str, children: Sequence["subprocess.Popen[bytes]"], stopping: Callable[[], bool]) -> bool:
    """Until the front answers /health 200 from the box; False if a child exited or we are told to stop."""
    with httpx.Client(verify=False, timeout=5) as client:
        while not stopping() and all(child.poll() is None for child in children):
            try:
                if client.get(f"{url}/health").status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    return False


def warm(url: str) -> list[str]:
    """Fetch the page, every file it links and what it asks first, through the front; the paths fetched."""
    fetched: list[str] = []
    with httpx.Client(base_url=url, verify=False, timeout=30) as client:
        try:
            wanted = ["/", "/api/stats", "/api/samples", "/knobs", "/api/class/me"]  # the last: the nickname field
            while wanted:
                path = wanted.pop(0)
                if path in fetched:
                    continue
                text = client.get(path).text
                fetched.append(path)
                if path == "/":
                    wanted += [p for p in LINKED.findall(text) if not p.startswith("//")]
                elif path.endswith(".js"):
                    folder = path.rpartition("/")[0]
                    wanted += [f"{folder}/{name}" for name in IMPORTED.findall(text)] + STATIC.findall(text)
        except httpx.HTTPError:
            pass  # a warm-up that fails leaves a slower first load, nothing worse
    return fetched
