"""The connection cap's choice at the limit: evict the oldest connection that owes a request, else refuse."""

from dataclasses import dataclass

from app.door.connections import ConnectionGuard


@dataclass(eq=False)
class FakeConnection:
    waiting: bool
    closed: bool = False

    def close(self) -> None:
        self.closed = True


def test_at_the_cap_the_oldest_waiting_connection_makes_room() -> None:
    guard = ConnectionGuard(request_timeout_s=1, max_connections=3, max_live=1)
    busy, oldest_idle, newer_idle = FakeConnection(False), FakeConnection(True), FakeConnection(True)
    for connection in (busy, oldest_idle, newer_idle):
        assert guard.admit(connection)
    newcomer = FakeConnection(True)
    assert guard.admit(newcomer)
    assert (busy.closed, oldest_idle.closed, newer_idle.closed) == (False, True, False)
    assert (guard.open, guard.evicted, guard.refused) == (3, 1, 0)


def test_when_every_connection_has_a_request_in_progress_the_newcomer_is_refused() -> None:
    guard = ConnectionGuard(request_timeout_s=1, max_connections=2, max_live=1)
    busy = [FakeConnection(False), FakeConnection(False)]
    for connection in busy:
        assert guard.admit(connection)
    assert not guard.admit(FakeConnection(True))
    assert not any(connection.closed for connection in busy)
    assert (guard.open, guard.evicted, guard.refused) == (2, 0, 1)
