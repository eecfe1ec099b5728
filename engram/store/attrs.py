"""The shape rule for a memory's `attrs` (free-form metadata): a JSON object nested at most
`MAX_ATTRS_DEPTH` levels deep.

Why a depth limit: orjson refuses to serialise values nested more than 254 levels, and attrs are written
inside responses (a view is itself a few levels deep) and hashed as part of an import line's key. Deeper
attrs crashed `engram import` and made admin importMemories answer 500; now they are refused up front,
as bad input of that one memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engram.errors import InvalidInput

MAX_ATTRS_DEPTH = 64


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests lists/objects more than `limit` levels (iterative: no recursion limit)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def check_attrs(attrs: Any) -> None:
    """None or an object of at most MAX_ATTRS_DEPTH levels; raises InvalidInput otherwise."""
    if attrs is None:
        return
    if not isinstance(attrs, dict):
        raise InvalidInput("attrs must be an object")
    if depth_exceeds(attrs, MAX_ATTRS_DEPTH):
        raise InvalidInput(f"attrs are nested more than {MAX_ATTRS_DEPTH} levels deep")


def nul_path(value: Any) -> list[str | int] | None:
    """The path of the first string (or object key) in a JSON value holding U+0000, None when none does.

    PostgreSQL can store U+0000 neither in text nor in jsonb (a `\\u0000` escape breaks every `::jsonb`
    cast of its row), so no write may carry one on either backend (engram/store/prepared_memories.py). Iterative: a
    deeply nested value cannot exhaust the stack."""
    stack: list[tuple[Any, list[str | int]]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return path
        elif isinstance(item, list | tuple):
            stack.extend((child, [*path, i]) for i, child in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and "\x00" in key:
                    return [*path, key]
            stack.extend((item[key], [*path, key]) for key in reversed(list(item)))
    return None
