"""Dates a memory's text speaks of, as keyword terms: relative ones resolved against its createdAt.

"I went to the support group yesterday", written on 2023-05-08, is about 2023-05-07: the keyword index
adds the terms `2023-05-07`, `2023-05`, `may` and `2023` to the memory (engram/search/keyword_index.py),
so "what happened on 7 May 2023?" or "in May 2023" can match it, as they match a memory that says
"2023-05-07" or "May" outright (an ISO date in the text adds its month and year the same way; a day
written out, "15 July 2023" or "on August 20" in the year it was written, adds its ISO day and month).
Month names are added as the analyzer stems them ("july" -> "juli"), so they meet the query's word.
Every memory also gets the ISO day and month it was written (`created_terms`, weighted as a tag): in a
conversation the session's date is often the only date an answer has ("I was in Chicago, it was
awesome!"). A query's own days and months ("on April 10, 2022", "in July 2023", "between August 11 and
August 15 2023") become the same ISO terms (`query_date_terms`), so a question naming a date meets
what was said or done then. Every memory holding a date, written or resolved, also gets the term
`@date`, and a question asking for a
time ("When did ...?", "What date ...", "How long ago ...") gets it as a query term: BM25 then favours
the memories that say when, in proportion to how rare they are in the space.

A small resolver of English expressions, not a date-parsing library: dateparser's search_dates finds
dates in free text but reads every number as one ("5 km", "2 kg") and costs milliseconds per memory,
which indexing 100k memories cannot pay. Resolved here, against the UTC day of createdAt:
today / tonight / this morning|afternoon|evening, yesterday, last night, the day before yesterday,
tomorrow, the day after tomorrow; last|this|next week|weekend|month|year; last|this|next <weekday> and
on <weekday> (the nearest one before createdAt for last/on, after it for next); <n> days|weeks|months|
years ago; in <n> days|weeks|months|years; n is a number or a word from one to twelve (or a/an). A week
or weekend resolves to its Monday or Saturday, a month to its month, a year to its year. Vaguer: a few|
several|a couple (of) days|weeks|months|years ago resolves to its month (its year for years), and "on
the 15th" to that day of the month it was written in (of the month before, when that day is to come).

The embedding side of a "When ...?" question (`the_event`): the hybrid search embeds it without its lead
("When did Caroline go to the support group?" as "Caroline go to the support group?"), the words that
tell of the event, while the keyword side keeps the lead for `@date` (docs/benchmarks.md#locomo), where
the ranking policy of the space's model asks for it (`RankingPolicy.event_query`: MiniLM's does, the
multilingual model's does not).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from .analyzer import stem

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
# Two looser forms of chat (`_vague`): a vague count ago ("a few days ago", "a couple of weeks ago") and a
# day of the month alone ("on the 15th"). Measured on LoCoMo's tuning half and not taken (they cost
# another category more than they gained): weekday abbreviations ("last fri"), "this past weekend", "two
# weekends ago", "last august" and seasons ("last summer" as its three months): docs/benchmarks.md#locomo.
_FEW = {"few": 3, "several": 3, "couple": 2, "couple of": 2}
_VAGUE = re.compile(
    r"\b(?:(?:a )?(?P<few>couple of|couple|several|few) (?P<unit>day|week|month|year)s ago"
    r"|on the (?P<nth>\d{1,2})(?:st|nd|rd|th)(?! of))\b"
)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_NAME = re.compile(
    r"\b(?:" + "|".join(MONTHS) + r")\s+\d{1,2}\b|\b\d{1,2}\s+(?:" + "|".join(MONTHS) + r")\b"
)
_MONTHS_RE = "(" + "|".join(MONTHS) + ")"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
# "August 15, 2023", "15 August 2023", "15th of August, 2023"; "August 11" / "11 August" (no year); "July 2023"
_DAY_MONTH_YEAR = re.compile(
    r"\b(?:"
    + _MONTHS_RE
    + " "
    + _ORDINAL
    + r"|"
    + _ORDINAL
    + " (?:of )?"
    + _MONTHS_RE
    + r")(?:,? (\d{4}))?\b"
)
_MONTH_YEAR = re.compile(r"\b" + _MONTHS_RE + r",? (\d{4})\b")
# any absolute date the text writes ("2026-03-21", "August 15, 2023", "15th of August", "July 2023"): what
# update_cues leaves out of a change's predicate, a date being when something changed, not what
ABSOLUTE_DATE = re.compile(f"{_ISO.pattern}|{_DAY_MONTH_YEAR.pattern}|{_MONTH_YEAR.pattern}")
_BETWEEN = re.compile(r"\b(?:between|from) (.+?) (?:and|to|until) (.+)")
MAX_RANGE_DAYS = 31  # a query's "between A and B" names each day up to this many
_ASKS_WHEN = re.compile(r"^\W*(?:when\b|what (?:date|day|time|year|month)\b|how long ago\b|since when\b)")


# A question's lead asking when, with its auxiliary verb ("When did", "What year was", "How long ago did")
_WHEN_LEAD = re.compile(
    r"^\W*(?:when|what (?:date|day|time|year|month)|how long ago|since when)\b"
    r"(?:\s+(?:did|was|were|is|are|will|does|do|has|have|had)\b)?\s*",
    re.IGNORECASE,
)


def names_relative_date(folded_text: str) -> bool:
    """The text dates something relative to when it was written ("yesterday", "last Friday", ...): it
    reports an event, which a later memory does not make stale (engram/service/supersession.py)."""
    return _RELATIVE.search(folded_text) is not None


def asks_when(folded_query: str) -> bool:
    return bool(_ASKS_WHEN.match(folded_query))


def the_event(query: str) -> str:
    """A question asking when, without that lead: the event it asks about, as the text to embed ("When did
    Caroline go to the support group?" -> "Caroline go to the support group?"). Embedded whole, the
    question sits nearer other questions ("when did you go?") than the turn that tells of the event;
    the keyword side keeps the whole text (its `@date` term comes from the lead). Other text unchanged."""
    event = _WHEN_LEAD.sub("", query, count=1)
    return event if re.search(r"\w", event) else query


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
    for match in _VAGUE.finditer(folded_text):
        resolved = _vague(match, day)
        if resolved is not None:
            found.extend(_terms_of(*resolved))
    for named, grain in absolute_dates(folded_text, day.year):
        found.extend(_iso_terms(named, grain))
    for match in _ISO.finditer(folded_text):
        year, month = int(match[1]), int(match[2])
        if 1 <= month <= 12:
            found.extend([f"{year:04d}-{month:02d}", stem(MONTHS[month - 1]), str(year)])
    if found or _MONTH_NAME.search(folded_text):
        found.append(DATE_TERM)
    return found


def created_terms(created_ms: int) -> list[str]:
    """The day and month a memory was written, as the same ISO terms a date in a text gets: a question
    naming a day or month ("on 10 April 2022", "in July 2023") matches what was said then."""
    day = datetime.fromtimestamp(created_ms / 1000, tz=UTC).date()
    return _iso_terms(day, "day")


def query_date_terms(folded_query: str) -> list[str]:
    """ISO terms for the days and months a query names outright ("April 10, 2022", "in July 2023",
    "between August 11 and August 15 2023": each day of a range up to MAX_RANGE_DAYS). A day written
    without a year takes the query's one year, if it names exactly one."""
    years = set(re.findall(r"\b(\d{4})\b", folded_query))
    default = int(next(iter(years))) if len(years) == 1 else None
    named = absolute_dates(folded_query, default)
    between = _BETWEEN.search(folded_query)
    if between:
        ends = [absolute_dates(part, default) for part in (between[1], between[2])]
        if ends[0] and ends[1] and ends[0][0][1] == ends[1][0][1] == "day":
            first, last = ends[0][0][0], ends[1][0][0]
            span = (last - first).days
            if 0 < span <= MAX_RANGE_DAYS:
                named += [(first + timedelta(days=i), "day") for i in range(1, span)]
    found: list[str] = []
    for when, grain in named:
        found.extend(_iso_terms(when, grain))
    return list(dict.fromkeys(found))


def absolute_dates(folded_text: str, default_year: int | None) -> list[tuple[date, str]]:
    """(date, "day") for each day of a month the text names (in `default_year` when no year is written;
    skipped when there is none) and (first of the month, "month") for each month named with its year."""
    found: list[tuple[date, str]] = []
    spans: list[tuple[int, int]] = []
    for match in _DAY_MONTH_YEAR.finditer(folded_text):
        month, number = match[1] or match[4], int(match[2] or match[3])
        year = int(match[5]) if match[5] else default_year
        if year is None:
            continue
        try:
            found.append((date(year, MONTHS.index(month) + 1, number), "day"))
        except ValueError:  # "31 june"
            continue
        spans.append(match.span())
    for match in _MONTH_YEAR.finditer(folded_text):
        if not any(start <= match.start() < end for start, end in spans):
            found.append((date(int(match[2]), MONTHS.index(match[1]) + 1, 1), "month"))
    return found


def _iso_terms(day: date, grain: str) -> list[str]:
    month = f"{day.year:04d}-{day.month:02d}"
    return [day.isoformat(), month] if grain == "day" else [month]


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


def _vague(match: re.Match[str], day: date) -> tuple[date, str] | None:
    """A vague count ago names only its month (days, weeks, months) or year; "on the 15th" is this
    month's, or last month's when this month's is still to come."""
    if match["few"]:
        n, unit = _FEW[match["few"]], match["unit"]
        if unit == "year":
            return date(day.year - n, 1, 1), "year"
        back = {"day": timedelta(days=n), "week": timedelta(weeks=n)}.get(unit)
        return (day - back if back else _add_months(day, -n)), "month"
    nth = int(match["nth"])
    month = day if nth <= day.day else _add_months(day, -1)
    try:
        return date(month.year, month.month, nth), "day"
    except ValueError:  # "on the 31st" in a month of 30 days
        return None


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
    # the month's name as the analyzer stems it ("july" -> "juli"), so a query naming the month meets it
    month = [f"{day.year:04d}-{day.month:02d}", stem(MONTHS[day.month - 1]), str(day.year)]
    if grain == "day":
        return [day.isoformat(), *month]
    if grain == "week":
        return [day.isoformat(), *month]
    if grain == "month":
        return month
    return [str(day.year)]
