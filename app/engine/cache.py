"""Answers a review seen recently from memory: the cheapest inference is the one not run."""

import threading
from dataclasses import dataclass

from cachetools import TTLCache

from app.engine.model import Ranking


@dataclass(frozen=True, slots=True)
class CacheSnapshot:
    hits: int
    misses: int
    size: int
    hits_by_path: dict[str, int]


class ResultCache:
    """A bounded TTL cache shared by all paths; locked because path 1 runs on many threads."""

    def __init__(self, maxsize: int, ttl_s: float) -> None:
        self._cache: TTLCache[str, Ranking] = TTLCache(maxsize=maxsize, ttl=ttl_s)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0
        self._hits_by_path: dict[str, int] = {}

    @staticmethod
    def key(text: str) -> str:
        return text.strip()

    def get(self, text: str, path: str = "") -> Ranking | None:
        """The cached ranking or None; a hit is counted for `path`."""
        with self._lock:
            ranking = self._cache.get(self.key(text))
            if ranking is None:
                self.misses += 1
            else:
                self.hits += 1
                self._hits_by_path[path] = self._hits_by_path.get(path, 0) + 1
            return ranking

    def put(self, text: str, ranking: Ranking) -> None:
        with self._lock:
            self._cache[self.key(text)] = ranking

    def __len__(self) -> int:
        return len(self._cache)

    def snapshot(self) -> CacheSnapshot:
        with self._lock:
            return CacheSnapshot(self.hits, self.misses, len(self._cache), dict(self._hits_by_path))
