"""Dates a memory's text speaks of, as keyword terms: relative ones resolved against its createdAt.

"I went to the support group yesterday", written on 2023-05-08, is about 2023-05-07: the keyword index
adds the terms `2023-05-07`, `2023-05`, `may` and `2023` to the memory (engram/search/keyword_index.py),
so "what happened on 7 May 2023?" or "in May 2023" can match it, as they match a memory that says
"2023-05-07" or "May" outright (an ISO date in the text adds its month and year the same way). Every
memory holding a date, written or resolved, also gets the term `@date`, and a question asking for a
time ("When did ...?", "What date ...", "How long ago ...") gets it as a query term: BM25 then favours
the memories that say when, in proportion to how rare they are in the space.

A small resolver of English expressions, not a date-parsing library: dateparser's search_dates finds
dates in free text but reads every number as one ("5 km", "2 kg") and costs milliseconds per memory,
which indexing 100k memories cannot pay. Resolved here, against the UTC day of createdAt:
today / tonight / this morning|afternoon|evening, yesterday, last night, the day before yesterday,
tomorrow, the day after tomorrow; last|this|next week|weekend|month|year; last|this|next <weekday> and
on <weekday> (the nearest one before createdAt for last/on, after it for next); <n> days|weeks|months|
years ago; in <n> days|weeks|months|years; n is a number or a word from one to twelve (or a/an). A week
or weekend resolves to its Monday or Saturday, a month to its month, a year to its year.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
           "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
DATE_TERM = "@date"  # no analyzer term can collide with it: terms are runs of letters and digits

_DAY_WORDS = {
    "the day before yesterday": -2, "yesterday": -1, "last night": -1, "today": 0, "tonight": 0,
    "this morning": 0, "this afternoon": 0, "this evening": 0, "tomorrow": 1, "the day after tomorrow": 2,
}  # fmt: skip
_UNIT = r"(day|week|month|year)s?"
_COUNT = r"(\d{1,3}|" + "|".join(NUMBERS) + r")"
_RELATIVE = re.compile(
    r"\b(?:(?P<word>" + "|".join(sorted(_DAY_WORDS, key=len, reverse=True)) + r")"
    r"|(?P<which>last|this|next|on) (?P<what>week|weekend|month|year|" + "|".join(WEEKDAYS) + r")"
    r"|" + _COUNT.replace("(", "(?P<ago_n>", 1) + " " + _UNIT.replace("(", "(?P<ago_unit>", 1) + r" ago"
    r"|in " + _COUNT.replace("(", "(?P<in_n>", 1) + " " + _UNIT.replace("(", "(?P<in_unit>", 1) + r")\b"
)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_NAME = re.compile(
    r"\b(?:" + "|".join(MONTHS) + r")\s+\d{1,2}\b|\b\d{1,2}\s+(?:" + "|".join(MONTHS) + r")\b"
)
_ASKS_WHEN = re.compile(r"^\W*(?:when\b|what (?:date|day|time|year|month)\b|how long ago\b|since when\b)")


def names_relative_date(folded_text: str) -> bool:
    """The text dates something relative to when it was written ("yesterday", "last Friday", ...): it
    reports an event, which a later memory does not make stale (engram/service/supersession.py)."""
    return _RELATIVE.search(folded_text) is not None


def asks_when(folded_query: str) -> bool:
    return bool(_ASKS_WHEN.match(folded_query))


def date_terms(folded_text: str, created_ms: int) -> list[str]:
    """Terms for the dates `folded_text` (case-folded) names, relative ones resolved against created_ms."""
    if not folded_text:
        return []
    day = datetime.fromtimestamp(created_ms / 1000, tz=UTC).date()
    found: list[str] = []
    for match in _RELATIVE.finditer(folded_text):
        resolved = _resolve(match, day)
        if resolved is not None:
            found.extend(_terms_of(*resolved))
    for match in _ISO.finditer(folded_text):
        year, month = int(match[1]), int(match[2])
        if 1 <= month <= 12:
            found.extend([f"{year:04d}-{month:02d}", MONTHS[month - 1], str(year)])
    if found or _MONTH_NAME.search(folded_text):
        found.append(DATE_TERM)
    return found


def _resolve(match: re.Match[str], day: date) -> tuple[date, str] | None:
    if match["word"]:
        return day + timedelta(days=_DAY_WORDS[match["word"]]), "day"
    if match["which"]:
        which, what = match["which"], match["what"]
        step = {"last": -1, "this": 0, "next": 1, "on": -1}[which]
        if what in WEEKDAYS:
            if which == "this":
                return day + timedelta(days=WEEKDAYS.index(what) - day.weekday()), "day"
            return _weekday(day, WEEKDAYS.index(what), step), "day"
        if which == "on":
            return None
        if what in ("week", "weekend"):
            monday = day - timedelta(days=day.weekday()) + timedelta(weeks=step)
            return (monday + timedelta(days=5) if what == "weekend" else monday), "week"
        if what == "month":
            return _add_months(day, step), "month"
        return date(day.year + step, 1, 1), "year"
    count, unit = (match["ago_n"], match["ago_unit"]) if match["ago_n"] else (match["in_n"], match["in_unit"])
    n = int(count) if count.isdigit() else NUMBERS[count]
    n = -n if match["ago_n"] else n
    if unit == "day":
        return day + timedelta(days=n), "day"
    if unit == "week":
        return day + timedelta(weeks=n), "week"
    if unit == "month":
        return _add_months(day, n), "month"
    return date(day.year + n, 1, 1), "year"


def _weekday(day: date, weekday: int, step: int) -> date:
    """The nearest `weekday` strictly before `day` (step -1) or strictly after it (step 1)."""
    if step < 0:
        back = (day.weekday() - weekday) % 7 or 7
        return day - timedelta(days=back)
    ahead = (weekday - day.weekday()) % 7 or 7
    return day + timedelta(days=ahead)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _terms_of(day: date, grain: str) -> list[str]:
    month = [f"{day.year:04d}-{day.month:02d}", MONTHS[day.month - 1], str(day.year)]
    if grain == "day":
        return [day.isoformat(), *month]
    if grain == "week":
        return [day.isoformat(), *month]
    if grain == "month":
        return month
    return [str(day.year)]
