"""LAB_DOMAIN is a host name or an IP literal, nothing else."""

import pytest

from app.front.domain import checked_domain


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("localhost", "localhost"),
        ("192.168.0.12", "192.168.0.12"),
        ("::1", "::1"),
        ("2001:DB8:0:0::1", "2001:db8::1"),
        ("Lab.School.kr", "lab.school.kr"),
        ("lab-1.example", "lab-1.example"),
        ("실습.한국", "xn--ru4bjd.xn--3e0b707e"),
    ],
)
def test_a_host_name_or_an_ip_address_is_taken(given: str, used: str) -> None:
    assert checked_domain(given) == used


@pytest.mark.parametrize(
    "given",
    [
        "",
        " ",
        "lab.school.kr ",
        "a b",
        "lab.school.kr\nrespond injected",
        "lab.example {",
        "-lab.example",
        "lab-.example",
        "lab..example",
        "lab.example.",
        "a" * 64 + ".example",
        "127.1",
        "256.1.1.1",
        "fe80::1%eth0",
        "lab_1.example",
        "https://lab.example",
        "lab.example:8443",
        "*.example",
    ],
)
def test_anything_else_is_refused_with_a_sentence(given: str) -> None:
    with pytest.raises(ValueError, match="LAB_DOMAIN"):
        checked_domain(given)
