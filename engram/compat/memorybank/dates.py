"""Dates as the plugin reads them: `arrow.get(text)` (the ISO 8601 family; no timezone means UTC).

Upstream turns a date it cannot parse into "now" without a word (a string timestamp such as
"1674743424.0" silently became the current time); engram answers 422 instead, naming the field.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import arrow
from arrow.parser import ParserError

from .models import field_error

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_date(value: str, loc: list[str | int]) -> datetime:
    """The instant `value` names, in UTC; `RequestInvalid` (422) when arrow cannot read it."""
    try:
        return arrow.get(value).to("UTC").datetime
    except (ParserError, ValueError, TypeError, OverflowError):
        raise field_error(loc, f"invalid datetime format: {value!r}", "value_error.datetime") from None


def epoch_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)  # integer math: float timestamps round


def iso_ms(moment: datetime) -> str:
    """engram's createdAt spelling: ISO 8601 in UTC with milliseconds and a Z."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
