"""What the class typed, told by the front: X-Forwarded-Proto, -Host and -For, believed from the front alone.

Behind the classroom front the box hears plain HTTP from loopback; without this, every address the
page and Swagger show would be `http://` at the front's HTTPS port. Only the trusted proxy's headers
are applied (anyone else's are ignored), and only well-formed ones, so no client can make the page
name another address. uvicorn's own proxy-header handling is off (app/serve.py): it knows no Host.
"""

import ipaddress
import re

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["Forwarded"]

# A host as a URL may carry it: a name or IPv4 literal, or a bracketed IPv6 literal, and an optional port.
HOST = re.compile(rb"^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::[0-9]{1,5})?$")


def one_address(value: bytes) -> str | None:
    try:
        return str(ipaddress.ip_address(value.decode("ascii").strip()))
    except (UnicodeDecodeError, ValueError):
        return None


class Forwarded:
    """Pure ASGI: for a connection from `trusted`, the scheme, Host and client the front says it received."""

    def __init__(self, app: ASGIApp, *, trusted: str) -> None:
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and (scope.get("client") or ("",))[0] == self.trusted:
            scope = self.applied(scope)
        await self.app(scope, receive, send)

    @staticmethod
    def applied(scope: Scope) -> Scope:
        headers = dict(scope["headers"])
        scope = dict(scope)
        proto = headers.get(b"x-forwarded-proto", b"").strip().lower()
        if proto in (b"http", b"https"):
            secure = proto == b"https"
            scope["scheme"] = ("wss" if secure else "ws") if scope["type"] == "websocket" else proto.decode()
        host = headers.get(b"x-forwarded-host", b"").strip()
        if HOST.match(host):
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"host"] + [(b"host", host)]
        client = one_address(headers.get(b"x-forwarded-for", b""))
        if client is not None:
            scope["client"] = (client, 0)
        return scope
