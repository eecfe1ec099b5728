"""The keyword analyzer's rules, table-driven (engram/search/analyzer.py), and what they do to BM25 ranking."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.search.analyzer import fold, terms
from engram.search.keyword_index import KeywordIndex

CASES = [
    # identifiers: parts and the whole
    ("ENG-1502", ["eng", "1502", "eng-1502"]),
    ("eng-1502", ["eng", "1502", "eng-1502"]),
    # hostnames: parts, the whole, and the hyphenated host piece
    ("pg-prod-02.internal", ["pg", "prod", "02", "internal", "pg-prod-02.internal", "pg-prod-02"]),
    ("kafka-2.internal:9092", ["kafka", "2", "internal", "9092", "kafka-2.internal:9092", "kafka-2"]),
    # versions: parts, the whole, and major.minor
    ("4.15.9", ["4", "15", "9", "4.15.9", "4.15"]),
    ("16.2", ["16", "2", "16.2"]),
    # snake_case constants are compounds too
    ("READ_MEDIA", ["read", "media", "read_media"]),
    # sentence punctuation does not make a compound
    ("fixed. Then", ["fix"]),
    # stop words of the text's language are dropped (Snowball's lists); a compound keeps them inside it
    ("what do I like in my morning cup of joe", ["like", "morn", "cup", "joe"]),
    ("what-we-do", ["what-we-do"]),
    ("who is she", []),
    # the language is guessed from its stop words: Spanish stop words go (one stemmer for all languages)
    ("¿Dónde está la reunión del equipo?", ["reunion", "equipo"]),
    # German
    ("die Änderungen an der Tabelle", ["anderungen", "tabell"]),
    # one stop word of another language is no evidence: a tag or a one-word query keeps its word
    ("ci", ["ci"]),
    ("die", ["die"]),
    # stemming of letter-only words
    ("upgraded databases running", ["upgrad", "databas", "run"]),
    # NFKC, case folding and accents
    ("ＡＢＣ ｆｕｌｌ", ["abc", "full"]),
    ("José Müller STRASSE", ["jose", "muller", "strass"]),
    ("Café, naïve", ["cafe", "naiv"]),
    # CJK: overlapping bigrams, a lone character stays whole; kana marks are kept
    ("日本語", ["日本", "本語"]),
    ("東", ["東"]),
    ("がぎ", ["がぎ"]),
    ("한국어", ["한국", "국어"]),
    ("회의는 내일", ["회의", "의는", "내일"]),
    ("locales/ja.json にある", ["local", "ja", "json", "locales/ja.json", "にあ", "ある"]),
    # no terms at all
    ("", []),
    ("-- !! ::", []),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_analyzer_rules(text, expected):
    assert terms(text) == expected


def test_fold_keeps_kana_marks_and_drops_latin_accents():
    assert fold("Éé ガ") == "ee ガ"


def test_an_exact_identifier_outranks_a_shared_prefix_and_versions_match_by_major_minor():
    index = KeywordIndex()
    rows = [
        "ENG-1531: webhook verification failed",
        "ENG-1502: login loop in Safari",
        "the eng team met about 1502 things",
        "jose patched to 4.15.9",
    ]
    index.add([(i + 1, "did:plc:a", 0, (), text, None) for i, text in enumerate(rows)])
    assert index.search("what was ENG-1502?", 3).row_ids.tolist()[0] == 2
    assert index.search("jose 4.15", 1).row_ids.tolist() == [4]
    assert index.search("patching", 1).row_ids.tolist() == [4]  # stems meet


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_any_text_gives_nonempty_terms_and_is_stable(text):
    found = terms(text)
    assert all(found) and terms(text) == found


def test_shared_function_words_earn_no_keyword_score():
    """A memory sharing only "what", "do", "my" with the query is no keyword match at all, and a memory
    holding every content word scores as a full match (1.0 is the query's attainable score)."""
    index = KeywordIndex()
    rows = [
        "Aiko's review template asks what we will not do and what my team ships.",
        "Dana takes oat milk in her coffee every morning.",
        "The morning standup is capped at 15 minutes.",
    ]
    index.add([(i + 1, "did:plc:a", 0, (), text, None) for i, text in enumerate(rows)])
    found = index.search("what do I take in my morning coffee", 3).best()
    assert 1 not in found
    assert max(found, key=found.get) == 2
    assert 0.0 < found[3] < found[2] <= 1.0
    full = index.search("oat milk coffee", 1).best()
    # every term once, at about the average length: 1 / (k1 + 1) of BM25's upper bound
    assert list(full) == [2] and full[2] == pytest.approx(1 / 2.2, rel=0.05)


def test_keyword_scores_are_shares_of_the_query_so_a_weak_match_stays_weak():
    """The best candidate is not promoted to 1.0: a query whose rare words no memory holds scores low."""
    index = KeywordIndex()
    index.add([(1, "did:plc:a", 0, (), "the deploy notes mention dates", None),
               (2, "did:plc:a", 0, (), "billing uses integer cents", None)])  # fmt: skip
    found = index.search("zanzibar quokka deploy", 2).best()
    assert list(found) == [1] and found[1] < 0.5
