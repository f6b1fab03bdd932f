"""Merging async iterators: arrival order across sources, each source's own order, clean stops."""

import asyncio
from collections.abc import AsyncIterator

import pytest

from app.paths.merge import merged


class Gated:
    """A source that yields its items one at a time, each only when the test lets it."""

    def __init__(self, name: str, items: list[str]) -> None:
        self.name = name
        self.items = items
        self.gates = [asyncio.Event() for _ in items]
        self.closed = False

    async def run(self) -> AsyncIterator[str]:
        try:
            for item, gate in zip(self.items, self.gates, strict=True):
                await gate.wait()
                yield f"{self.name}:{item}"
        finally:
            self.closed = True


async def next_of(stream: AsyncIterator[str | None]) -> str | None:
    async with asyncio.timeout(5):  # a failure guard: each item is already released when asked for
        return await anext(stream)


async def test_items_come_in_arrival_order_and_the_stream_ends_with_its_last_source() -> None:
    a, b = Gated("a", ["1", "2"]), Gated("b", ["1", "2"])
    stream = merged([a.run(), b.run()])
    b.gates[0].set()
    assert await next_of(stream) == "b:1"
    a.gates[0].set()
    assert await next_of(stream) == "a:1"
    a.gates[1].set()
    assert await next_of(stream) == "a:2"
    b.gates[1].set()
    assert await next_of(stream) == "b:2"
    with pytest.raises(StopAsyncIteration):
        await next_of(stream)
    assert a.closed and b.closed


async def test_a_source_that_released_everything_keeps_its_own_order() -> None:
    a, b = Gated("a", ["1", "2", "3"]), Gated("b", ["1"])
    for gate in a.gates + b.gates:
        gate.set()
    got = [item async for item in merged([a.run(), b.run()]) if item is not None]
    assert sorted(got) == ["a:1", "a:2", "a:3", "b:1"]
    assert [item for item in got if item.startswith("a:")] == ["a:1", "a:2", "a:3"]


async def test_quiet_sources_produce_a_keepalive_none() -> None:
    a = Gated("a", ["1"])
    stream = merged([a.run()], quiet_s=0.01)
    assert await next_of(stream) is None  # nothing was released, so only the keep-alive can come
    a.gates[0].set()
    assert [item async for item in stream if item is not None] == ["a:1"]


async def test_closing_early_cancels_every_source() -> None:
    a, b = Gated("a", ["1", "2"]), Gated("b", ["1"])
    stream = merged([a.run(), b.run()], name="merge-under-test")
    a.gates[0].set()
    assert await next_of(stream) == "a:1"
    await stream.aclose()  # what a stream does when its client has gone
    assert a.closed and b.closed
    assert not [t for t in asyncio.all_tasks() if t.get_name().startswith("merge-under-test")]


async def test_a_failing_source_fails_the_stream_and_stops_the_others() -> None:
    b = Gated("b", ["1"])

    async def broken() -> AsyncIterator[str]:
        raise ConnectionError("store went away")
        yield "never"  # pragma: no cover - makes this an async generator

    with pytest.raises(ConnectionError, match="store went away"):
        async for _ in merged([broken(), b.run()]):
            pass
    assert b.closed
