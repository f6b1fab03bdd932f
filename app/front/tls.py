"""The front's certificate, ready before the front starts: the instructor's own files, or one made here once.

For localhost, a LAN address or a LAN name the lab makes a self-signed certificate (EC P-256,
`openssl`) naming exactly LAB_DOMAIN (and the loopback addresses for localhost) and keeps it in
the front's state folder: browsers warn once, `burst.py -k`. It is made before the front starts,
never on a first handshake, and remade only for another name or when it is within 30 days of its end.
A public domain's real certificate (e.g. certbot's fullchain.pem / privkey.pem) is given with
LAB_FRONT_CERT and LAB_FRONT_KEY.
"""

import ipaddress
import shutil
import subprocess
from pathlib import Path

__all__ = ["certificate", "subject_names"]

DAYS = 825  # the longest validity Apple's and Chromium's rules accept for a TLS server certificate
RENEW_S = 30 * 86400


def subject_names(domain: str) -> list[str]:
    """The subjectAltName entries: the domain (as IP or DNS), and loopback's for localhost."""
    names = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"] if domain == "localhost" else []
    try:
        ipaddress.ip_address(domain)
        own = f"IP:{domain}"
    except ValueError:
        own = f"DNS:{domain}"
    return names if own in names else [own, *names]


def openssl() -> str:
    found = shutil.which("openssl")
    if found is None:
        raise FileNotFoundError("openssl is missing: `just classroom` installs Debian's package")
    return found


def fresh(cert: Path) -> bool:
    if not cert.exists():
        return False
    check = [openssl(), "x509", "-checkend", str(RENEW_S), "-noout", "-in", str(cert)]
    return subprocess.run(check, capture_output=True, check=False).returncode == 0


def certificate(domain: str, folder: Path) -> tuple[Path, Path]:
    """(certificate, key) for `domain` in `folder`, made now if missing or ending soon."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = domain.replace(":", "_")  # an IPv6 literal in a file name
    cert, key = folder / f"{stem}.crt", folder / f"{stem}.key"
    if fresh(cert) and key.exists():
        return cert, key
    argv = [openssl(), "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    argv += ["-days", str(DAYS), "-subj", f"/CN={domain[:64]}", "-keyout", str(key), "-out", str(cert)]
    argv += ["-addext", "subjectAltName=" + ",".join(subject_names(domain)), "-addext", "extendedKeyUsage=serverAuth"]
    subprocess.run(argv, capture_output=True, check=True, timeout=60)
    key.chmod(0o600)
    return cert, key
