"""A bounded LRU whose entries expire at a per-entry deadline (DID documents, verified credentials, seen
JWT ids and admin nonces). ``now`` is injected so tests can move time. Single-threaded (event loop) use."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class TtlCache(Generic[V]):
    def __init__(self, max_entries: int, now: Callable[[], float]):
        if max_entries < 1:
            raise ValueError("max_entries must be >= 1")
        self._max = max_entries
        self._now = now
        self._entries: OrderedDict[Hashable, tuple[float, V]] = OrderedDict()

    def get(self, key: Hashable) -> V | None:
        hit = self._entries.get(key)
        if hit is None:
            return None
        expires_at, value = hit
        if self._now() >= expires_at:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return value

    def put(self, key: Hashable, value: V, expires_at: float) -> None:
        self._entries[key] = (expires_at, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def add_if_absent(self, key: Hashable, value: V, expires_at: float) -> bool:
        """Insert unless a live entry exists; True if inserted (the replay-cache primitive)."""
        if self.get(key) is not None:
            return False
        self.put(key, value, expires_at)
        return True

    def pop(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
