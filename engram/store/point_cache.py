"""Remembered point reads: the answer of a small read by a unique key, kept until any write could have
changed it (docs/internals.md#space-cache, docs/scale-out.md#point-reads).

`Store.point_read(fn, ...)` remembers `fn`'s answer when `fn` is marked `@cacheable`: a function whose
answer depends only on rows of `spaces`, `api_keys`, `api_key_spaces` and `revoked_credentials` (the
tables whose every change reaches the store's change counter on both backends), never on what a
space-scoped write (`Store.write_to`) changes (a space's generation, memories, repo), and returns a value
callers never modify. Each answer is stored with the counter's `keys_value()` read *before* the read, and
served while the counter still shows that value: as `SpaceService.find` does for spaces, except that this
process's own scoped commits (a memory-write load) leave it alone (engram/store/change_counter.py). Arguments are kept only as a sha256
(the API-key lookup's argument is the raw key). At most `MAX_ENTRIES` answers; the oldest goes first.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

F = TypeVar("F", bound=Callable[..., Any])
MAX_ENTRIES = 4096
MISS = object()


def cacheable(fn: F) -> F:
    fn.cacheable_point_read = True  # type: ignore[attr-defined]
    return fn


def is_cacheable(fn: Callable[..., Any]) -> bool:
    return getattr(fn, "cacheable_point_read", False)


class PointReadCache:
    def __init__(self, max_entries: int = MAX_ENTRIES):
        self._entries: dict[tuple[Any, ...], tuple[int, Any]] = {}
        self._max = max_entries

    @staticmethod
    def _key(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, ...]:
        return fn.__module__, fn.__qualname__, hashlib.sha256(orjson.dumps(args)).digest()

    def get(self, fn: Callable[..., Any], args: tuple[Any, ...], version: int) -> Any:
        entry = self._entries.get(self._key(fn, args))
        return entry[1] if entry is not None and entry[0] == version else MISS

    def put(self, fn: Callable[..., Any], args: tuple[Any, ...], version: int, value: Any) -> None:
        if len(self._entries) >= self._max:
            del self._entries[next(iter(self._entries))]  # the oldest entry
        self._entries[self._key(fn, args)] = (version, value)
