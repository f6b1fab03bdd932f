"""When a server closed each of many raw sockets: how slow-client tests and tools see the connection deadline."""

import selectors
import socket
import time


def closed_times(sockets: list[socket.socket], opened_at: float, limit_s: float) -> list[float]:
    """Seconds from opening until the server closed each socket (EOF or reset), for those it closed."""
    times = []
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        deadline = opened_at + limit_s
        while selector.get_map() and (left := deadline - time.monotonic()) > 0:
            for key, _ in selector.select(timeout=left):
                readable = key.fileobj
                assert isinstance(readable, socket.socket)
                try:
                    closed = readable.recv(4096) == b""
                except ConnectionResetError:
                    closed = True
                if closed:
                    selector.unregister(readable)
                    times.append(time.monotonic() - opened_at)
    return sorted(times)
