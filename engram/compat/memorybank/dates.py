"""Dates as the plugin reads them: `arrow.get(text)` (the ISO 8601 family; no timezone means UTC).

A filter date upstream cannot parse silently became "now" (a string timestamp such as "1674743424.0");
engram answers 422 for a filter date instead, naming the field. A document's `created_at` is any string
upstream (`Optional[str]`): engram keeps it as given and dates the chunk only when arrow can read it
(docs/memorybank.md "Dates").
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import arrow
from arrow.parser import ParserError

from .models import field_error

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_date(value: str, loc: list[str | int]) -> datetime:
    """The instant `value` names, in UTC; `RequestInvalid` (422) when arrow cannot read it."""
    moment = read_date(value)
    if moment is None:
        raise field_error(loc, f"invalid datetime format: {value!r}", "value_error.datetime")
    return moment


def read_date(value: str) -> datetime | None:
    """The instant `value` names in UTC, None when arrow cannot read it."""
    try:
        return arrow.get(value).to("UTC").datetime
    except (ParserError, ValueError, TypeError, OverflowError):
        return None


def epoch_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)  # integer math: float timestamps round


def iso_ms(moment: datetime) -> str:
    """engram's createdAt spelling: ISO 8601 in UTC with milliseconds and a Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
