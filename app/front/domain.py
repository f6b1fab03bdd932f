"""`LAB_DOMAIN`: a host name or an IP literal, nothing else, checked before anything starts.

The name goes into the certificate and the address the class is told; a newline, a space or an
empty value there once added a second site or a plain-HTTP catch-all to the front's config.
"""

import ipaddress
import re

import idna

__all__ = ["checked_domain"]

LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


def checked_domain(value: str) -> str:
    """The name as the front uses it (an IP in its compressed form, a host name in lower-case ASCII), or ValueError.

    Host names follow RFC 1123 (letters, digits and inner hyphens; labels of 1-63; 253 in all; a
    last label that is not all digits); an internationalised name is accepted in its IDNA form.
    """
    if value != value.strip() or not value:
        raise ValueError(f"LAB_DOMAIN={value!r} must be a host name or an IP address, without spaces")
    if "%" not in value:  # an IPv6 zone (fe80::1%eth0) names no address a certificate can carry
        try:
            return ipaddress.ip_address(value).compressed
        except ValueError:
            pass
    try:
        name = idna.encode(value, uts46=True).decode("ascii")
    except idna.IDNAError:
        name = value.lower()
    labels = name.split(".")
    if len(name) > 253 or not all(LABEL.match(label) for label in labels) or labels[-1].isdigit():
        raise ValueError(f"LAB_DOMAIN={value!r} is neither a host name (e.g. lab.school.kr) nor an IP address")
    return name
