"""Relative dates resolved against createdAt as keyword terms (engram/search/dates.py), and what they do to
BM25 ranking of "When ...?" and date questions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram.search.analyzer import terms
from engram.search.dates import DATE_TERM, asks_when, created_terms, date_terms, query_date_terms, the_event
from engram.search.keyword_index import KeywordIndex

MONDAY = int(datetime(2023, 5, 8, 13, 0, tzinfo=UTC).timestamp() * 1000)  # 2023-05-08 was a Monday
DAY = 86_400_000

CASES = [
    ("i went to the support group yesterday", ["2023-05-07", "2023-05", "may", "2023"]),
    ("the day before yesterday", ["2023-05-06", "2023-05", "may", "2023"]),
    ("we met last friday", ["2023-05-05", "2023-05", "may", "2023"]),
    ("see you next friday", ["2023-05-12", "2023-05", "may", "2023"]),
    ("on saturday we hiked", ["2023-05-06", "2023-05", "may", "2023"]),
    ("this weekend", ["2023-05-13", "2023-05", "may", "2023"]),
    ("last week", ["2023-05-01", "2023-05", "may", "2023"]),
    ("next month i start", ["2023-06", "june", "2023"]),
    ("last year", ["2022"]),
    ("two weeks ago i painted", ["2023-04-24", "2023-04", "april", "2023"]),
    ("3 days ago", ["2023-05-05", "2023-05", "may", "2023"]),
    ("in 3 days we fly", ["2023-05-11", "2023-05", "may", "2023"]),
    ("due on 2026-02-12", ["2026-02", "februari", "2026"]),  # month names as the analyzer stems them
    ("back on 15 july 2023", ["2023-07-15", "2023-07"]),  # written out: the ISO terms a query's date gets
    ("see you on august 20!", ["2023-08-20", "2023-08"]),  # no year: the year it was written in
    ("ran 5 km, lost 2 kg", []),  # numbers are not dates
    ("started a painting class a few days ago", ["2023-05", "may", "2023"]),  # vague: its month only
    ("a couple of weeks ago", ["2023-04", "april", "2023"]),
    ("we moved several years ago", ["2020"]),
    ("the recital was on the 5th", ["2023-05-05", "2023-05", "may", "2023"]),
    ("the party is on the 15th", ["2023-04-15", "2023-04", "april", "2023"]),  # still to come: last month's
    ("on the 4th of july", ["2023-07-04", "2023-07"]),  # a written-out day, not "on the 4th"
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_relative_dates_resolve_against_created_at(text, expected):
    assert date_terms(text, MONDAY) == (expected + [DATE_TERM] if expected else [])


def test_a_month_and_day_marks_a_date_and_questions_asking_when_are_recognised():
    assert date_terms("her birthday is on january 22", MONDAY) == ["2023-01-22", "2023-01", DATE_TERM]
    assert date_terms("we talked in june", MONDAY) == []  # a month alone dates nothing
    assert asks_when("when did caroline go to the support group?")
    assert asks_when("what date is the offsite?") and asks_when("how long ago did she move?")
    assert not asks_when("what did caroline do?")


def test_when_questions_and_date_questions_find_the_turn_that_says_when():
    index = KeywordIndex()
    index.add([
        (1, "a", MONDAY, (), "Caroline: the support group people were so kind to me.", None),
        (2, "a", MONDAY, (), "Caroline: I went to a support group yesterday.", None),
        (3, "a", MONDAY + 30 * DAY, (), "Caroline: support group friends came over to paint.", None),
    ])  # fmt: skip
    assert index.search("When did Caroline go to the support group?", 1).row_ids.tolist() == [2]
    assert index.search("What did Caroline do on 2023-05-07?", 3).row_ids.tolist()[0] == 2
    assert index.search("Caroline in May 2023", 3).row_ids.tolist()[0] == 2


QUERIES = [
    ("how was john feeling on april 10, 2022?", ["2022-04-10", "2022-04"]),
    ("what did maria do on the 31st of july, 2023?", ["2023-07-31", "2023-07"]),
    ("which places was evan visiting in july 2023?", ["2023-07"]),
    (
        "where was john between august 11 and august 14 2023?",  # a range: every day of it
        ["2023-08-11", "2023-08", "2023-08-14", "2023-08-12", "2023-08-13"],
    ),
    ("what happened on august 11?", []),  # no year named: no day to name
    ("what did she say in may?", []),
]


@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_a_query_names_days_and_months_as_iso_terms(query, expected):
    assert query_date_terms(query) == expected


@pytest.mark.parametrize(
    ("written", "month"),
    [
        ((2023, 8, 3), "July"),
        ((2023, 2, 10), "January"),
        ((2024, 1, 5), "December"),
        ((2023, 10, 1), "September"),
    ],
)
def test_the_month_a_memory_resolves_to_meets_the_month_a_query_names(written, month):
    created = int(datetime(*written, tzinfo=UTC).timestamp() * 1000)
    # the analyzer stems "july" to "juli": the resolved month's term must be that stem, not the plain name
    assert terms(month)[0] in date_terms("i saw her last month", created)


def test_a_question_naming_a_day_finds_what_was_written_that_day():
    index = KeywordIndex()
    april_12 = int(datetime(2022, 4, 12, 9, 0, tzinfo=UTC).timestamp() * 1000)
    index.add([
        (1, "a", april_12, (), "John: two days ago I felt on top of the world after the game.", None),
        (2, "a", april_12 + 60 * DAY, (), "John: I felt on top of the world at the game again.", None),
        (3, "a", april_12 - 2 * DAY, (), "John: the game starts soon, I feel nervous.", None),
        (4, "a", april_12 + 30 * DAY, (), "John: the game was fun, I felt great.", None),
    ])  # fmt: skip
    assert created_terms(april_12 - 2 * DAY) == ["2022-04-10", "2022-04"]
    # row 1 says "two days ago" (resolved to 10 April) and row 3 was written that day; the others not
    found = index.search("How was John feeling at the game on April 10, 2022?", 4).row_ids.tolist()
    assert sorted(found[:2]) == [1, 3]
    assert index.search("John at the game in May 2022", 1).row_ids.tolist() == [4]


def test_a_question_asking_when_is_embedded_as_the_event_it_asks_about():
    assert the_event("When did Caroline go to the support group?") == "Caroline go to the support group?"
    assert the_event("what year was Evan's first marathon") == "Evan's first marathon"
    assert the_event("When Evan got back from Canada") == "Evan got back from Canada"
    assert the_event("How long ago did she move?") == "she move?"
    for unchanged in ("What did Caroline research?", "Whenever I run", "When?", "the deploy when ready"):
        assert the_event(unchanged) == unchanged
