"""Values read the way Sim's TypeScript routes read them (pure functions): JavaScript truthiness, the text a
value becomes in a PostgreSQL text column, `Number.parseInt`, and PostgreSQL's `LIKE` (docs/compat.md "Sim").
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any


def truthy(value: Any) -> bool:
    """JavaScript's `!!value` for a JSON value: only null, false, 0 and "" are falsy (`[]` and `{}` are not)."""
    if value is None or value is False or value == "":
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    return True


def js_string(value: Any) -> str | None:
    """The text a JSON scalar becomes in a text column (`String(value)`): None for objects and arrays."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return re.sub(r"e([+-])0*(\d)", r"e\1\2", repr(value))  # 1e-07 -> 1e-7, as JavaScript writes it
    return None


_LEADING_INT = re.compile(r"\s*([+-]?)(?:(0[xX])([0-9a-fA-F]*)|(\d+))")


def parse_int(text: str) -> int | None:
    """`Number.parseInt(text)`: the leading integer of the text ("2abc" is 2, "0x1f" is 31), None where
    JavaScript gives NaN."""
    match = _LEADING_INT.match(text)
    if match is None:
        return None
    sign, hex_prefix, hex_digits, digits = match.groups()
    if hex_prefix and not hex_digits:
        return None
    value = int(hex_digits, 16) if hex_prefix else int(digits)
    return -value if sign == "-" else value


_DECIMAL = re.compile(r"[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)")
_RADIX = {"0x": 16, "0o": 8, "0b": 2}


def js_number(text: str) -> float:
    """JavaScript's `Number(text)` (what `z.coerce.number()` does): surrounding whitespace ignored, "" is 0,
    decimal and 0x/0o/0b literals, (+/-)Infinity; anything else is NaN."""
    body = text.strip()
    if not body:
        return 0.0
    if _DECIMAL.fullmatch(body):
        return float(body)
    if body.lstrip("+-") == "Infinity":
        return -math.inf if body.startswith("-") else math.inf
    radix = _RADIX.get(body[:2].lower())
    if radix is not None:
        try:
            return float(int(body[2:], radix)) if body[2:] and body[2:].isalnum() else math.nan
        except ValueError:
            return math.nan
    return math.nan


def like_matcher(needle: str) -> Callable[[str], bool]:
    """Whether a key matches PostgreSQL's `key LIKE '%' || needle || '%'`: `%` and `_` in the needle are
    wildcards (any run, any one character) and a backslash escapes the next character, as upstream (docs/compat.md#sim-memory-block)."""
    parts: list[str] = []
    chars = iter(needle)
    for ch in chars:
        if ch == "\\":
            escaped = next(chars, None)
            parts.append(re.escape(escaped) if escaped is not None else "")
        elif ch == "%":
            parts.append(".*")
        elif ch == "_":
            parts.append(".")
        else:
            parts.append(re.escape(ch))
    pattern = re.compile(".*" + "".join(parts) + ".*", re.DOTALL)
    return lambda key: pattern.fullmatch(key) is not None
