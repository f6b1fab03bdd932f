"""The student key: who a request is, where many students share one address (a school's NAT).

The box gives each page a random key in the `lab_student` cookie at its first load; burst.py sends
one per run. The classroom front keys its per-student limits on it (app/front/nginx.conf holds the
same pattern; tests/front/test_front_config.py holds them equal). A key is not a secret nor a login:
anyone may make one, which is why the front keeps per-address ceilings (docs/classroom.md).
"""

import re
import secrets

from starlette.requests import Request, cookie_parser
from starlette.responses import Response
from starlette.types import Scope

__all__ = ["COOKIE", "KEY", "LIFETIME_S", "keep_student", "key_of", "new_key", "valid"]

COOKIE = "lab_student"
KEY = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
LIFETIME_S = 12 * 3600  # a lesson day: the same student after a reload, a new one tomorrow


def new_key() -> str:
    return secrets.token_urlsafe(16)  # 22 characters of the pattern


def valid(value: str | None) -> bool:
    return value is not None and KEY.fullmatch(value) is not None


def key_of(scope: Scope) -> str | None:
    """The well-formed student key a request or socket carries in its cookie, or None."""
    for name, value in scope["headers"]:
        if name == b"cookie":
            key = cookie_parser(value.decode("latin-1")).get(COOKIE)
            if valid(key):
                return key
    return None


def keep_student(request: Request, response: Response) -> None:
    """A page's response gives a new student a key, kept for the lesson; a student who has one keeps it."""
    if valid(request.cookies.get(COOKIE)):
        return
    response.set_cookie(
        COOKIE,
        new_key(),
        max_age=LIFETIME_S,
        path="/",
        samesite="lax",
        httponly=True,  # the page's scripts never need it: the browser sends it with every request and socket
        secure=request.url.scheme == "https",
    )
