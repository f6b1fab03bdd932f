"""The SSRF guard sees through every IPv6 form that embeds or translates an IPv4 address.

Only IPv4-mapped addresses were unwrapped: NAT64, 6to4, IPv4-compatible, IPv4-translated
and site-local forms of 127.0.0.1 or 169.254.169.254 passed the guard.
"""

import ipaddress
from collections.abc import Callable

import pytest

from app.errors import WebhookRefused
from app.jobs.ssrf import embedded_ipv4, is_blocked, resolve_target


def hex32(v4: str) -> str:
    packed = ipaddress.IPv4Address(v4).packed
    return f"{packed[0:2].hex()}:{packed[2:4].hex()}"


def teredo(server: str, client: str) -> str:
    """2001:0:<server>:<flags>:<port ^ ffff>:<client ^ ffffffff> (RFC 4380)."""
    hidden = ipaddress.IPv4Address(int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF)
    return f"2001:0:{hex32(server)}:0:f227:{hex32(str(hidden))}"


def nat64_local_48(v4: str) -> str:
    """RFC 6052 with a /48 prefix: two IPv4 bytes, then the zero `u` byte, then two more."""
    b = ipaddress.IPv4Address(v4).packed
    return f"64:ff9b:1:{b[0:2].hex()}:00{b[2:3].hex()}:{b[3:4].hex()}00::"


FORMS: dict[str, Callable[[str], str]] = {
    "ipv4-mapped": lambda v4: f"::ffff:{v4}",
    "ipv4-translated": lambda v4: f"::ffff:0:{v4}",
    "ipv4-compatible": lambda v4: f"::{v4}",
    "nat64-well-known": lambda v4: f"64:ff9b::{v4}",
    "nat64-local-96": lambda v4: f"64:ff9b:1::{v4}",
    "nat64-local-48": nat64_local_48,
    "6to4": lambda v4: f"2002:{hex32(v4)}::1",
    "teredo-server": lambda v4: teredo(v4, "8.8.8.8"),
    "teredo-client": lambda v4: teredo("65.54.227.120", v4),
    "site-local": lambda v4: f"fec0::{v4}",
}
INSIDE = {
    "loopback": "127.0.0.1",
    "private-10": "10.1.2.3",
    "private-192": "192.168.1.1",
    "link-local-metadata": "169.254.169.254",
    "carrier-grade-nat": "100.64.0.1",
    "reserved": "240.0.0.1",
    "multicast": "224.0.0.1",
    "unspecified": "0.0.0.0",
    "broadcast": "255.255.255.255",
}
# Forms nothing routes globally (deprecated or one network's own): refused even around a public address.
NEVER_GLOBAL = {"ipv4-compatible", "nat64-local-96", "nat64-local-48", "site-local", "teredo-server", "teredo-client"}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("inside", INSIDE)
def test_every_form_of_an_inside_ipv4_address_is_blocked(form: str, inside: str) -> None:
    address = ipaddress.IPv6Address(FORMS[form](INSIDE[inside]))
    assert is_blocked(address), f"{address} ({form} of {INSIDE[inside]})"


@pytest.mark.parametrize("form", FORMS)
def test_a_public_ipv4_address_passes_only_in_routable_forms(form: str) -> None:
    address = ipaddress.IPv6Address(FORMS[form]("8.8.8.8"))
    assert is_blocked(address) is (form in NEVER_GLOBAL), str(address)


@pytest.mark.parametrize("form", ["ipv4-mapped", "ipv4-translated", "ipv4-compatible", "nat64-well-known", "6to4"])
def test_the_embedded_address_is_found(form: str) -> None:
    assert ipaddress.IPv4Address("169.254.169.254") in embedded_ipv4(
        ipaddress.IPv6Address(FORMS[form]("169.254.169.254"))
    )


def test_both_teredo_ends_are_found() -> None:
    found = embedded_ipv4(ipaddress.IPv6Address(teredo("65.54.227.120", "127.0.0.1")))
    assert found == [ipaddress.IPv4Address("65.54.227.120"), ipaddress.IPv4Address("127.0.0.1")]


@pytest.mark.parametrize("form", FORMS)
async def test_a_webhook_url_with_an_embedded_metadata_address_is_refused(form: str) -> None:
    url = f"http://[{FORMS[form]('169.254.169.254')}]:8080/hook"
    with pytest.raises(WebhookRefused, match="non-public address"):
        await resolve_target(url, allow_private=False)


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700::1111", "2a00:1450:4001:80b::200e"])
def test_global_addresses_still_pass(address: str) -> None:
    assert not is_blocked(ipaddress.ip_address(address))
