"""KeywordIndex: BM25 ranking, field weights, deletions, filters, scoped rows and any user text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.search.filters import Filters
from engram.search.keyword_index import KeywordIndex, words


def build(*docs, start=1):
    index = KeywordIndex()
    index.add(
        [
            (start + i, author, ms, tags, text, source)
            for i, (text, tags, source, author, ms) in enumerate(docs)
        ]
    )
    return index


def doc(text, tags=(), source=None, author="did:plc:a", ms=0):
    return (text, tags, source, author, ms)


def ranked(index, text, k=10, **kw):
    result = index.search(text, k, **kw)
    return result.row_ids.tolist(), result.scores.tolist()


def test_rarer_words_and_more_words_rank_higher():
    index = build(
        doc("the deploy failed"), doc("the cat sat"), doc("the deploy of the cat"), doc("the the the")
    )
    rows, scores = ranked(index, "deploy cat")
    assert rows[0] == 3 and set(rows) == {1, 2, 3}  # "the" alone matches nothing asked for
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert ranked(index, "zebra") == ([], [])


def test_text_weighs_more_than_tags_and_tags_more_than_source():
    index = build(doc("x", source="kiwi"), doc("x", tags=("kiwi",)), doc("kiwi y"))
    assert ranked(index, "kiwi")[0] == [3, 2, 1]


def test_words_fold_case_and_accents_and_ignore_punctuation():
    assert words("Café, naïve_ÉCOLE!") == ["cafe", "naiv", "ecol", "naive_ecole"]  # engram/search/analyzer.py
    index = build(doc("Un café au lait"))
    assert ranked(index, "CAFE")[0] == [1]
    assert ranked(index, '"NEAR(*) OR -:') == ([], [])


def test_removed_rows_stop_matching_and_stop_counting():
    index = build(doc("apple pie"), doc("apple tart"), doc("pear tart"))
    index.remove([2, 99])
    assert set(ranked(index, "apple tart")[0]) == {1, 3}
    assert index.dead == 1


def test_filters_within_and_also():
    index = build(
        doc("red fox", author="did:plc:a", ms=10, tags=("zoo",)),
        doc("red fox", author="did:plc:b", ms=20),
        doc("red hen", author="did:plc:b", ms=30),
    )
    assert ranked(index, "red", filters=Filters(author="did:plc:b"))[0] == [2, 3]
    assert ranked(index, "red", filters=Filters(since_ms=25))[0] == [3]
    assert ranked(index, "red", filters=Filters(tags=("zoo",)))[0] == [1]
    assert ranked(index, "fox", within=[2, 3])[0] == [2]
    result = index.search("fox", 1)
    assert list(result.best()) == [2] and set(result.of([1, 2, 3, 42])) == {
        1,
        2,
    }  # `of` ignores the top-1 cut


def test_ties_go_to_the_lower_row_id_and_k_cuts():
    index = build(*(doc("same words here") for _ in range(5)))
    assert ranked(index, "words", k=3)[0] == [1, 2, 3]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_any_text_is_a_valid_query(text):
    index = build(doc("alpha beta"), doc("gamma"))
    rows, scores = ranked(index, text)
    assert set(rows) <= {1, 2} and all(s > 0 for s in scores)


def test_memories_written_moments_apart_are_each_others_conversation_neighbours():
    minute, hour = 60_000, 3_600_000
    index = build(
        doc("Sam: how did you get into watercolor painting?", ms=0),
        doc("Evan: my friend got me into it", ms=20_000),
        doc("Evan: I painted a sunset", ms=40_000, author="did:plc:b"),
        doc("a note written an hour later", ms=40_000 + hour),
        doc("another note, four minutes on", ms=40_000 + hour + 4 * minute),
        doc("a bulk import, the same second", ms=40_000 + hour + 4 * minute + 300),
    )
    before, after = index.adjacency()
    assert before.tolist() == [-1, 0, 1, -1, 3, -1] and after.tolist() == [1, 2, -1, 4, -1, -1]
    result = index.search("watercolor", 5)
    assert result.row_ids.tolist() == [1]
    assert result.adjacent([1, 2, 4, 99]) == {1: (None, 2), 2: (1, 3), 4: (None, 5)}
    # a neighbour that fails the search's filters, or was deleted, is none
    only_a = index.search("watercolor", 5, Filters(author="did:plc:a"))
    assert only_a.adjacent([2]) == {2: (1, None)}
    index.remove([2])
    assert index.adjacency()[1].tolist()[:3] == [2, -1, -1]  # 1 and 3 are 40 s apart: neighbours now
    assert index.search("sunset", 5).adjacent([3]) == {3: (1, None)}


def test_a_query_naming_a_speaker_marks_the_turns_said_by_others():
    index = KeywordIndex()
    index.add([
        (1, "a", 0, (), "Caroline: I researched adoption agencies.", None, {"speaker": "Caroline"}),
        (2, "a", 1, (), "Melanie: how is the adoption research going, Caroline?", None, {"speaker": "Melanie"}),
        (3, "a", 2, (), "a note about adoption", None, None),
        (4, "a", 3, (), "Mel Jones: adoption is hard", None, {"speaker": "Mel Jones"}),
    ])  # fmt: skip
    everyone = [1, 2, 3, 4]
    assert index.search("What did Caroline research about adoption?", 5).by_others(everyone) == {2, 4}
    assert index.search("what did jones say about adoption", 5).by_others(everyone) == {1, 2}
    # no speaker named (or only a word no speaker has): nobody is "other"
    assert index.search("adoption research", 5).by_others(everyone) == set()
    assert index.search("zebra", 5).by_others(everyone) == set()


def test_a_question_asking_when_marks_the_rows_that_say_when():
    """KeywordResult.dated: the rows whose text names a date, written or resolved (the `@date` term of
    engram/search/dates.py), only for a question asking when; deleted rows and rows the index lacks are
    never in it."""
    may_8 = 1_683_504_000_000  # 2023-05-08T00:00:00Z
    index = build(
        doc("John: guess what, something great happened this Tuesday!", ms=may_8),
        doc("James: tell me, what happened?", ms=may_8 + 1000),
        doc("John: I took first place at the city chess open", ms=may_8 + 2000),
        doc("James: the final is on 12 June 2023", ms=may_8 + 3000),
        doc("John: I have played chess for years", ms=may_8 + 4000),
    )
    every = [1, 2, 3, 4, 5, 99]
    assert index.search("When did John win the chess open?", 5).dated(every) == {1, 4}
    assert index.search("what date is the chess final", 5).dated([4, 5]) == {4}
    # any other question: no row is marked, whatever it says
    assert index.search("What did John win?", 5).dated(every) == set()
    assert index.search("When did John win?", 5).dated([]) == set()
    index.remove([1])
    assert index.search("When did John win the chess open?", 5).dated(every) == {4}


def test_adjacent_names_only_rows_with_an_allowed_neighbour():
    """KeywordResult.adjacent: each neighbour that exists and passes the filters, None for the other side,
    rows with neither left out; rows the index lacks ignored."""
    index = KeywordIndex()
    day = 86_400_000
    index.add([
        (1, "a", 0, (), "one", None), (2, "a", 60_000, ("x",), "two", None), (3, "a", 120_000, (), "three", None),
        (4, "a", 10 * day, (), "alone", None), (5, "a", 20 * day, ("x",), "four", None),
        (6, "a", 20 * day + 60_000, (), "five", None),
    ])  # fmt: skip
    everything = index.search("one", 5)
    assert everything.adjacent([1, 2, 3, 4, 5, 6, 99]) == {
        1: (None, 2),
        2: (1, 3),
        3: (2, None),
        5: (None, 6),
        6: (5, None),
    }
    tagged = index.search("two", 5, Filters(tags=("x",)))
    assert tagged.adjacent([1, 2, 3, 5, 6]) == {1: (None, 2), 3: (2, None), 6: (5, None)}
    assert everything.adjacent([]) == {} and everything.adjacent([4]) == {}
