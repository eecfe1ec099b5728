"""The one reading of a caller's search filters into `Filters` (engram/search/filters.py), for every door
that takes them (MCP recall, the console, the shims' metadata filters; docs/internals.md#search).

`where` is a JSON object of attrs predicates, one per field:
  {"team": "apollo"}                         string, number or boolean equality (a bare value)
  {"team": {"eq": "apollo"}}                 the same
  {"team": {"prefix": "apo"}}                a string value starting with it
  {"labels": {"in": ["a", "b"]}}             the value (or, for a list, an element) is one of them
  {"priority": {"gte": 2, "lte": 4}}         a number range (either end may be left out)
  {"due": {"after": "2026-01-01T00:00:00Z", "before": "2026-02-01T00:00:00Z"}}   a datetime range
Bounds are inclusive; several operators on one field must all hold; several fields must all hold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidInput
from ..search.filters import ATTR_OPS, MAX_ATTR_STRING, AttrPredicate, Filters, datetime_ms
from ..store.prepared_memories import parse_datetime_ms

MAX_FIELDS = 16
MAX_VALUES = 100
MAX_TAGS = 16
_FIELD = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def search_filters(
    *,
    author: str | None = None,
    tags: Sequence[str] = (),
    since: str | None = None,
    until: str | None = None,
    tags_any: Sequence[str] = (),
    tags_none: Sequence[str] = (),
    attrs: Sequence[AttrPredicate] = (),
) -> Filters:
    """The `Filters` of a search; raises InvalidInput naming the bad parameter."""
    for name, values in (("tags", tags), ("anyTags", tags_any), ("excludeTags", tags_none)):
        if len(values) > MAX_TAGS:
            raise InvalidInput(f"{name} holds at most {MAX_TAGS} tags", "InvalidFilter")
    since_ms = parse_datetime_ms(since, "since") if since else None
    until_ms = parse_datetime_ms(until, "until") if until else None
    return Filters(
        author=author,
        tags=tuple(dict.fromkeys(tags)),
        since_ms=since_ms,
        until_ms=until_ms,
        tags_any=tuple(dict.fromkeys(tags_any)),
        tags_none=tuple(dict.fromkeys(tags_none)),
        attrs=tuple(attrs),
    )


def parse_where(where: Mapping[str, Any] | None, name: str = "where") -> tuple[AttrPredicate, ...]:
    """The attrs predicates of a `where` object (module docstring); raises InvalidInput."""
    if where is None:
        return ()
    if not isinstance(where, Mapping):
        raise InvalidInput(f"{name} must be an object of field: condition", "InvalidFilter")
    if len(where) > MAX_FIELDS:
        raise InvalidInput(f"{name} names at most {MAX_FIELDS} fields", "InvalidFilter")
    return tuple(_predicate(field, condition, f"{name}.{field}") for field, condition in where.items())


def _predicate(field: str, condition: Any, at: str) -> AttrPredicate:
    if not isinstance(field, str) or not _FIELD.fullmatch(field):
        raise InvalidInput(f"{at}: a field name is 1-64 letters, digits or _.:-", "InvalidFilter")
    if not isinstance(condition, Mapping):
        return AttrPredicate(field, eq=_scalar(condition, at))
    unknown = set(condition) - set(ATTR_OPS)
    if unknown or not condition:
        raise InvalidInput(f"{at}: operators are {', '.join(ATTR_OPS)}", "InvalidFilter")
    values = condition.get("in")
    if values is not None and (not isinstance(values, list) or not 1 <= len(values) <= MAX_VALUES):
        raise InvalidInput(f"{at}.in must be a list of 1..{MAX_VALUES} values", "InvalidFilter")
    prefix = condition.get("prefix")
    if prefix is not None and (not isinstance(prefix, str) or len(prefix) > MAX_ATTR_STRING):
        raise InvalidInput(f"{at}.prefix must be a string", "InvalidFilter")
    return AttrPredicate(
        field,
        eq=_scalar(condition["eq"], f"{at}.eq") if "eq" in condition else None,
        prefix=prefix,
        in_=tuple(_scalar(v, f"{at}.in") for v in values) if values is not None else None,
        gte=_number(condition.get("gte"), f"{at}.gte"),
        lte=_number(condition.get("lte"), f"{at}.lte"),
        after_ms=_datetime(condition.get("after"), f"{at}.after"),
        before_ms=_datetime(condition.get("before"), f"{at}.before"),
    )


def _scalar(value: Any, at: str) -> str | float | bool:
    if isinstance(value, bool) or (isinstance(value, str) and len(value) <= MAX_ATTR_STRING):
        return value
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    raise InvalidInput(f"{at} must be a string, a finite number or a boolean", "InvalidFilter")


def _number(value: Any, at: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{at} must be a finite number", "InvalidFilter")
    return float(value)


def _datetime(value: Any, at: str) -> int | None:
    if value is None:
        return None
    ms = datetime_ms(value) if isinstance(value, str) else None
    if ms is None:
        raise InvalidInput(f"{at} must be an RFC 3339 datetime (e.g. 2026-01-31T00:00:00Z)", "InvalidFilter")
    return ms
