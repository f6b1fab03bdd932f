"""Path 2's held seats: a 429 can promise the refused client a seat when it comes back on time.

A hold is a promise about one seat at one time: the gate issues it only when the seat policy
(app/paths/seat_policy.py) holds that seat for the refused client, and walk-ins are kept from it
until then. Past its due time the seat is everyone's again; a returner who still comes within the
grace window goes first for the next seat that frees. Tokens are `id.mac` (HMAC-SHA256 with a secret
made per process, so a token cannot be forged and dies with the box); each is good for one seat,
once, and one bearer at a time: a copy presented while its hold's bearer waits in the lobby is `used`.
"""

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

TOKEN_MAX_CHARS = 64
SPENT_REMEMBERED = 4096  # ids kept after use or expiry, so a late or second try is told which


class HoldCheck(StrEnum):
    """What a presented token turned out to be (the `Seat-Hold-Result` header)."""

    VALID = "valid"  # a live hold: the bearer gets the held seat
    FORGED = "forged"  # malformed or the MAC does not match (another box, or made up)
    EXPIRED = "expired"  # came back after its grace window, or never known to this box
    USED = "used"  # already claimed a seat once, or a copy while its bearer waits in the lobby
    GONE = "gone"  # the bearer hung up while waiting for its held seat


HOLD_RESULTS = ("seated", "forged", "expired", "used")  # what /metrics counts per presented token


@dataclass(slots=True)
class Hold:
    due: float  # monotonic: when the bearer was told to come back (the Retry-After, rounded up)
    expires: float  # due + grace
    chars: int  # the refused review's length: what its return will cost the lane
    in_lobby: bool = False  # its bearer is waiting for a seat: the hold ends with it, not by the clock


@dataclass(frozen=True, slots=True)
class HoldsSnapshot:
    live: int
    issued: int
    no_shows: int  # expired unclaimed: a seat kept for nobody, for at most the grace window
    results: dict[str, int]


class SeatHolds:
    """Issues, checks and expires held seats; the seat gate decides when one may be issued and for when."""

    def __init__(
        self,
        *,
        grace_s: float,
        horizon_reviews: int,
        limit: int = 256,
        clock: Callable[[], float] = time.monotonic,
        secret: bytes | None = None,
    ) -> None:
        self.grace_s = grace_s
        # Counted in reviews, not seconds: the same number of holds whatever the host's speed (the gate
        # turns it into seconds at the measured service time).
        self.horizon_reviews = horizon_reviews
        self._limit = limit
        self._clock = clock
        self._secret = secret or secrets.token_bytes(32)
        self._live: dict[str, Hold] = {}
        self._spent: OrderedDict[str, HoldCheck] = OrderedDict()
        self._told: list[Hold] = []  # Retry-Afters given without a hold, until due (they bind nobody)
        self._issued = 0
        self._no_shows = 0
        self._results = dict.fromkeys(HOLD_RESULTS, 0)

    @property
    def enabled(self) -> bool:
        return self.grace_s > 0

    def now(self) -> float:
        """The clock due times are on (a test's own)."""
        return self._clock()

    @property
    def live(self) -> int:
        self._expire()
        return len(self._live)

    def issue(self, come_back_s: int, chars: int = 0) -> str | None:
        """A token for a seat held from now until `come_back_s` + grace; None when off or at the limit."""
        if not self.enabled or self.live >= self._limit:
            return None
        hold_id = secrets.token_urlsafe(12)
        due = self._clock() + come_back_s
        self._live[hold_id] = Hold(due, due + self.grace_s, chars)
        self._issued += 1
        return f"{hold_id}.{self._mac(hold_id)}"

    def tell(self, come_back_s: int, chars: int = 0) -> None:
        """Remember a Retry-After given without a hold until it is due: every later refusal is told a place
        behind it, held or not (a class is not all told the same second), though no walk-in waits for it."""
        due = self._clock() + come_back_s
        self._told = [*self.told(), Hold(due, due, chars)]

    def told(self) -> list[Hold]:
        now = self._clock()
        return [hold for hold in self._told if hold.due > now]

    def ahead(self) -> list[Hold]:
        """The live holds not yet due: the promises a walk-in must not break."""
        now = self._clock()
        return [hold for hold in self._live.values() if hold.due > now]

    def check(self, token: str) -> tuple[HoldCheck, str]:
        """(what the token is, its hold id); only VALID may be claimed or waited on."""
        hold_id, _, mac = token.strip().partition(".")
        if (
            len(token) > TOKEN_MAX_CHARS
            or not token.isascii()
            or not hold_id
            or not hmac.compare_digest(mac, self._mac(hold_id))
        ):
            return self._count(HoldCheck.FORGED), hold_id
        self._expire()
        if hold_id in self._live:
            return HoldCheck.VALID, hold_id
        return self._count(self._spent.get(hold_id, HoldCheck.EXPIRED)), hold_id

    def due_at(self, hold_id: str) -> float:
        hold = self._live.get(hold_id)
        return self._clock() if hold is None else hold.due

    def expires_in(self, hold_id: str) -> float:
        hold = self._live.get(hold_id)
        return 0.0 if hold is None else max(0.0, hold.expires - self._clock())

    def arrive(self, hold_id: str) -> HoldCheck:
        """A live hold's bearer in the lobby: VALID for the first, USED (counted) for a copy while it waits."""
        hold = self._live[hold_id]
        if hold.in_lobby:
            return self._count(HoldCheck.USED)
        hold.in_lobby = True
        return HoldCheck.VALID

    def waited_for(self, hold_id: str) -> bool:
        """Its bearer is in the lobby."""
        hold = self._live.get(hold_id)
        return hold is not None and hold.in_lobby

    def claim(self, hold_id: str) -> bool:
        """Turn a live hold into a seat (once); False if it is gone."""
        if self._live.pop(hold_id, None) is None:
            return False
        self._forget(hold_id, HoldCheck.USED)
        self._results["seated"] += 1
        return True

    def give_up(self, hold_id: str) -> None:
        """Its bearer waited in the lobby until the grace window ended: counted `expired` (it came, so no no-show)."""
        if self._live.pop(hold_id, None) is not None:
            self._forget(hold_id, HoldCheck.EXPIRED)
            self._results["expired"] += 1

    def drop(self, hold_id: str) -> None:
        """The bearer left while waiting: its seat goes back to everyone."""
        if self._live.pop(hold_id, None) is not None:
            self._forget(hold_id, HoldCheck.GONE)

    def snapshot(self) -> HoldsSnapshot:
        return HoldsSnapshot(self.live, self._issued, self._no_shows, dict(self._results))

    def _count(self, check: HoldCheck) -> HoldCheck:
        if check.value in self._results:
            self._results[check.value] += 1
        return check

    def _expire(self) -> None:
        now = self._clock()
        for hold_id in [i for i, hold in self._live.items() if hold.expires <= now and not hold.in_lobby]:
            del self._live[hold_id]
            self._no_shows += 1
            self._forget(hold_id, HoldCheck.EXPIRED)

    def _forget(self, hold_id: str, why: HoldCheck) -> None:
        self._spent[hold_id] = why
        while len(self._spent) > SPENT_REMEMBERED:
            self._spent.popitem(last=False)

    def _mac(self, hold_id: str) -> str:
        digest = hmac.new(self._secret, hold_id.encode("utf-8", "replace"), hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")
