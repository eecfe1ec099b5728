"""Reading the console's query strings and form fields: bad values become a 400 page naming the field."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ...errors import InvalidInput

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def text(params: Mapping[str, str], name: str, max_len: int = 1000) -> str:
    value = str(params.get(name, "")).strip()
    if len(value) > max_len:
        raise InvalidInput(f"{name} is longer than {max_len} characters")
    return value


def integer(params: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = str(params.get(name, "")).strip()
    if not raw:
        return default
    try:
        value = int(raw, 10)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, got {raw!r}") from None
    if not lo <= value <= hi:
        raise InvalidInput(f"{name} must be between {lo} and {hi}")
    return value


def decimal(params: Mapping[str, str], name: str, default: float, lo: float, hi: float) -> float:
    raw = str(params.get(name, "")).strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number, got {raw!r}") from None
    if not lo <= value <= hi:  # also refuses NaN
        raise InvalidInput(f"{name} must be between {lo} and {hi}")
    return value


EXACT_TAG = "tag"  # a repeatable parameter holding one tag as written (a tag may itself contain a comma)


def tags(params: Mapping[str, str], name: str = "tags") -> tuple[str, ...]:
    """Comma-separated tags (one text field of the search form), and for the filter field `tags` also
    every exact `tag` parameter (the chips' links, which a comma inside a tag would otherwise split),
    without blanks or repeats."""
    listed = [t.strip() for t in text(params, name).split(",") if t.strip()]
    getall = getattr(params, "getall", None)
    exact = (
        [t for t in getall(EXACT_TAG, []) if isinstance(t, str) and t] if name == "tags" and getall else []
    )
    return tuple(dict.fromkeys([*listed, *exact]))


def split_for_links(tags: tuple[str, ...]) -> tuple[str, list[str]]:
    """(the text field's comma-joined tags, the exact ones a comma would split) for a page's links."""
    return ", ".join(t for t in tags if "," not in t), [t for t in tags if "," in t]


def since(params: Mapping[str, str]) -> str | None:
    """A date input's YYYY-MM-DD (start of that day, UTC) or a full ISO datetime, as the API takes it."""
    value = text(params, "since", 64)
    if not value:
        return None
    return f"{value}T00:00:00Z" if _DATE.match(value) else value


def until(params: Mapping[str, str]) -> str | None:
    """A date input's YYYY-MM-DD (the end of that day, UTC: inclusive) or a full ISO datetime."""
    value = text(params, "until", 64)
    if not value:
        return None
    return f"{value}T23:59:59.999Z" if _DATE.match(value) else value
