"""Start Caddy with the committed Caddyfile, every path and port filled in from here.

Caddy runs with its admin API off and its state (local CA, certificates, autosaved config) in a
folder of ours, so a running class, the tests and other checkouts never share a port or a CA.
"""

import os
import shutil
import subprocess
import time
from pathlib import Path

import httpx

CADDYFILE = Path(__file__).with_name("Caddyfile")


def caddy_binary() -> str:
    """Debian's caddy (`just setup` installs it); a clear error where it is missing."""
    found = shutil.which("caddy")
    if found is None:
        raise FileNotFoundError("caddy is missing: `just setup` installs Debian's package")
    return found


def front_url(domain: str, https_port: int) -> str:
    host = f"[{domain}]" if ":" in domain else domain
    return f"https://{host}" if https_port == 443 else f"https://{host}:{https_port}"


def caddy_env(*, domain: str, https_port: int, upstream: str, state_dir: Path) -> dict[str, str]:
    """The placeholders the Caddyfile reads, and a home of its own so nothing lands in ~/.config or ~/.local."""
    return {
        **os.environ,
        "LAB_DOMAIN": domain,
        "LAB_HTTPS_PORT": str(https_port),
        "LAB_FRONT_UPSTREAM": upstream,
        "LAB_FRONT_STATE": str(state_dir / "data"),
        "HOME": str(state_dir),
        "XDG_CONFIG_HOME": str(state_dir / "config"),
        "XDG_DATA_HOME": str(state_dir / "data"),
    }


def start_caddy(*, domain: str, https_port: int, upstream: str, state_dir: Path) -> "subprocess.Popen[bytes]":
    """`caddy run` in the background, its JSON log in `state_dir/caddy.log`."""
    state_dir.mkdir(parents=True, exist_ok=True)
    env = caddy_env(domain=domain, https_port=https_port, upstream=upstream, state_dir=state_dir)
    argv = [caddy_binary(), "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"]
    with (state_dir / "caddy.log").open("ab") as log:
        # Its own session: a terminal's Ctrl-C reaches the classroom launcher, which stops Caddy once.
        return subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


def wait_front(url: str, process: "subprocess.Popen[bytes]", limit_s: float = 30.0) -> None:
    """Until the front answers HTTPS at all (a 502 while the box still loads counts: the front is up)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"caddy exited with {process.returncode}")
        try:
            httpx.get(f"{url}/health", verify=False, timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise TimeoutError(f"{url} never answered")
