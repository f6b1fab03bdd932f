"""The front's children die with it: kill -9 of `python -m app.front` must not leave nginx or the box on their ports."""

import os
import signal
from collections.abc import Callable

from app.box.launch import die_with_parent

__all__ = ["bound_to"]


def bound_to(parent: int) -> Callable[[], None]:
    """A `preexec_fn`: the child gets SIGTERM when `parent` dies (the box drains, nginx stops), even by SIGKILL.

    If the parent died between fork and this call, the signal would never come: the child stops itself.
    """

    def preexec() -> None:
        die_with_parent()
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec
