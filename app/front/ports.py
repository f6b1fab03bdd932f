"""A port the front needs, and who holds it: checked before anything starts, said in one line."""

import contextlib
import errno
import socket

import psutil

__all__ = ["describe", "holder", "taken"]


def taken(host: str, port: int) -> bool:
    """True when something else listens there (bound the way the box and the proxy bind: SO_REUSEADDR)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            if err.errno == errno.EADDRINUSE:
                return True
            raise
    return False


def holder(port: int) -> str:
    """Who listens on `port`: 'pid 1234 (nginx: master process …)', or what can be said without permission."""
    with contextlib.suppress(psutil.AccessDenied):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return describe(conn.pid)
    return "a process this user may not see (another user's; `sudo ss -ltnp` names it)"


def describe(pid: int) -> str:
    try:
        process = psutil.Process(pid)
        command = " ".join(filter(None, process.cmdline())).strip() or process.name()  # nginx pads its title
    except psutil.Error:
        return f"pid {pid}"
    return f"pid {pid} ({command[:120]})"
