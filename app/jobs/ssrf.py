"""Where a webhook may go: the SSRF guard that resolves a URL once and refuses any non-public address.

An IPv6 address is refused too when it carries or translates to a non-public IPv4 address,
in every standard form. The dispatcher (webhooks.py) checks again at connect time and
connects to the one address checked here.
"""

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import idna

from app.errors import WebhookRefused

MAX_URL_CHARS = 2000

# IPv6 ranges that carry an IPv4 address in their last 32 bits (RFC 4291, 2765, 6052).
IPV4_IN_LAST_32 = (
    ipaddress.IPv6Network("::ffff:0:0/96"),  # IPv4-mapped
    ipaddress.IPv6Network("::ffff:0:0:0/96"),  # IPv4-translated (SIIT)
    ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64 well-known prefix
)
# Never globally reachable, whatever they embed; Python's `is_global` (3.11) misses them.
NOT_GLOBAL_V6 = (
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible, deprecated (RFC 4291): nothing routes it
    ipaddress.IPv6Network("64:ff9b:1::/48"),  # NAT64 local-use prefixes (RFC 8215): one network's own
    ipaddress.IPv6Network("fec0::/10"),  # site-local, deprecated (RFC 3879)
)


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address this IPv6 address carries or is translated to, by each standard form:
    mapped, translated, compatible, NAT64 well-known, 6to4 and both ends of Teredo. A connection
    to the IPv6 address may reach any of them. (NAT64 local-use prefixes are refused whole.)"""
    found: list[ipaddress.IPv4Address] = []
    if any(address in net for net in (*IPV4_IN_LAST_32, NOT_GLOBAL_V6[0])):
        found.append(ipaddress.IPv4Address(address.packed[12:]))
    if address.sixtofour is not None:
        found.append(address.sixtofour)
    if address.teredo is not None:
        found.extend(address.teredo)
    return found


def is_blocked(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Anything not globally routable: loopback, private, link-local (cloud metadata
    169.254.169.254), carrier-grade NAT, reserved, multicast, unspecified; and an IPv6
    address that embeds or translates to any such IPv4 address, in every standard form."""
    if not address.is_global or address.is_multicast:
        return True
    if isinstance(address, ipaddress.IPv4Address):
        return False
    if any(address in net for net in NOT_GLOBAL_V6):
        return True
    return any(is_blocked(v4) for v4 in embedded_ipv4(address))


@dataclass(frozen=True, slots=True)
class Target:
    """A checked webhook URL and the one address to connect to (no second DNS answer)."""

    url: str
    host: str
    address: str


def ascii_url(url: str) -> str:
    """The URL with its host in ASCII: an internationalized name IDNA-encoded (UTS #46 mapping, so
    fullwidth digits become digits), or refused: the HTTP client fails on a non-ASCII host at
    every attempt, with an error nobody counts."""
    parts = urlsplit(url)
    host = parts.hostname
    if host is None or host.isascii():
        return url
    try:
        encoded = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError) as exc:
        raise WebhookRefused(
            f"`webhook_url` host {host!r} is not a valid internationalized domain name ({exc})."
        ) from None
    try:
        port = parts.port
    except ValueError:
        raise WebhookRefused("`webhook_url` has an invalid port.") from None
    credentials = parts.netloc.rpartition("@")[0]
    netloc = (f"{credentials}@" if credentials else "") + encoded + ("" if port is None else f":{port}")
    return urlunsplit(parts._replace(netloc=netloc))


async def resolve_target(url: str, *, allow_private: bool) -> Target:
    """Refuse a URL that is not http(s) or that resolves to any blocked address; `Target.url` has an ASCII host."""
    if len(url) > MAX_URL_CHARS:
        raise WebhookRefused(f"`webhook_url` is longer than {MAX_URL_CHARS} characters.")
    url = ascii_url(url)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookRefused("`webhook_url` must be an http:// or https:// URL with a host.")
    if parts.username is not None or parts.password is not None:
        raise WebhookRefused("`webhook_url` must not carry credentials.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise WebhookRefused("`webhook_url` has an invalid port.") from None
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise WebhookRefused(f"`webhook_url` host {parts.hostname!r} does not resolve.") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    blocked = sorted({str(a) for a in addresses if is_blocked(a)})
    if blocked and not allow_private:
        raise WebhookRefused(
            f"`webhook_url` host {parts.hostname!r} resolves to a non-public address ({', '.join(blocked)}); "
            "webhooks only go to public addresses."
        )
    return Target(url=url, host=parts.hostname, address=str(addresses[0]))


def pinned_url(target: Target) -> str:
    """The same URL with the checked address as host, so the connection goes where we checked."""
    parts = urlsplit(target.url)
    host = f"[{target.address}]" if ":" in target.address else target.address
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))
