"""The shape rule for a memory's `attrs` (free-form metadata): a JSON object nested at most
`MAX_ATTRS_DEPTH` levels deep.

Why a depth limit: orjson refuses to serialise values nested more than 254 levels, and attrs are written
inside responses (a view is itself a few levels deep) and hashed as part of an import line's key. Deeper
attrs crashed `engram import` and made admin importMemories answer 500; now they are refused up front,
as bad input of that one memory.
"""

from __future__ import annotations

from typing import Any

from engram.errors import InvalidInput

MAX_ATTRS_DEPTH = 64


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests lists/objects more than `limit` levels (iterative: no recursion limit)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
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
