"""Relative dates resolved against createdAt as keyword terms (engram/search/dates.py), and what they do to
BM25 ranking of "When ...?" and date questions."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram.search.dates import DATE_TERM, asks_when, date_terms
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
    ("due on 2026-02-12", ["2026-02", "february", "2026"]),
    ("ran 5 km, lost 2 kg", []),  # numbers are not dates
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_relative_dates_resolve_against_created_at(text, expected):
    assert date_terms(text, MONDAY) == (expected + [DATE_TERM] if expected else [])


def test_a_month_and_day_marks_a_date_and_questions_asking_when_are_recognised():
    assert date_terms("her birthday is on january 22", MONDAY) == [DATE_TERM]
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
