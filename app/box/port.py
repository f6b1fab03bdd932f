"""The box's port: one socket per incarnation, bound but not listening, and a lock that keeps the port the box's.

The server listens on the socket only once its start-up is over (uvicorn `--fd` hands it to asyncio, whose
`start_serving` calls `listen`), so a client that comes while an incarnation loads its model is refused at
once instead of waiting in a backlog that would reach the new incarnation as one crowd. A bound socket
that does not listen keeps out a server that listens, but not another box, which binds the same way (both
with SO_REUSEADDR): the lock file does, for the whole life of the box, restarts included.
"""

import fcntl
import os
import socket
import tempfile
from pathlib import Path


def bound_socket(host: str, port: int) -> socket.socket:
    """Bound, not listening: connections are refused until the server the socket is handed to starts serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted connections inherit it: uvicorn cannot set it on an fd it was handed.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def lock_file(port: int) -> Path:
    return Path(tempfile.gettempdir()) / f"lab-box-port-{port}.lock"


def hold_port(port: int) -> int:
    """An open descriptor holding the port's lock until it is closed (or the box dies); OSError(EADDRINUSE)
    while another box holds it, even one still starting, whose socket does not listen yet."""
    fd = os.open(lock_file(port), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise OSError(98, "Address already in use (by another box, still starting)") from None
    return fd


def claim_port(host: str, port: int) -> tuple[int, socket.socket]:
    """The port's lock and the first incarnation's socket; OSError, holding neither, when the port is taken."""
    lock = hold_port(port)
    try:
        return lock, bound_socket(host, port)
    except OSError:
        os.close(lock)
        raise
