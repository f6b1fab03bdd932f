"""Cancel a waiting request when its client hangs up, so the lane never infers for nobody.

Starlette keeps running a handler after the client has gone. Once the body has been read,
the next `receive()` only returns when the connection closes (`http.disconnect`), so one
watcher task per request turns that message into cancelling the work it guards.
"""

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from starlette.requests import Request

from app.errors import ClientGone

T = TypeVar("T")


async def _wait_for_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_client_leaves(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """Run `work`; if the client disconnects first, cancel it and raise ClientGone.

    Cancelling the work withdraws it wherever it waits (a seat, an open batch, the lane's
    FIFO); the lane and the batcher skip withdrawn work and count it; the caller counts the client.
    """
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_wait_for_disconnect(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        watcher.cancel()
    if task.done():
        return task.result()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    raise ClientGone("The client disconnected before its answer; its work was withdrawn.")
