"""The embedText rule (docs/embedders.md#what-text-is-embedded) and the f16 round trip."""

import numpy as np
import pytest

from engram.embed.text import MAX_DOCUMENT_BYTES, cut_utf8, document_text, query_text, round_through_f16


def test_short_text_unchanged_and_prefix_in_front():
    assert document_text("hello") == "hello"
    assert document_text("hello", prefix="passage: ") == "passage: hello"
    assert query_text("where is it", prefix="query: ") == "query: where is it"
    assert query_text("where is it") == "where is it"


def test_tags_line_appended_after_the_text_and_before_nothing_else():
    assert document_text("met Bob", tags=["work", "people"]) == "met Bob\n\nTags: work, people"
    assert document_text("x", tags=["a"], prefix="p: ") == "p: x\n\nTags: a"
    assert document_text("x", tags=[]) == "x"
    assert document_text("x", tags=["b c"]) == "x\n\nTags: b c"


def test_ascii_cut_at_exactly_24000_bytes():
    assert MAX_DOCUMENT_BYTES == 24000
    text = "a" * 24000
    assert document_text(text) == text
    assert document_text(text + "b") == text
    # The Tags line and the prefix come on top of the cut text, they are not cut themselves.
    assert document_text(text + "bbb", tags=["t"], prefix="P") == "P" + text + "\n\nTags: t"


@pytest.mark.parametrize("char", ["é", "€", "😀"])  # 2, 3 and 4 UTF-8 bytes
def test_multibyte_character_straddling_the_boundary_is_dropped_whole(char):
    width = len(char.encode("utf-8"))
    head = "a" * (24000 - 1)  # the character starts at byte 23999 and would end past 24000
    out = document_text(head + char + "tail")
    assert out == head
    assert len(out.encode("utf-8")) == 23999
    # Starting exactly at the boundary it fits when it ends at byte 24000.
    fits = "a" * (24000 - width) + char
    assert document_text(fits + "more") == fits


def test_cut_never_produces_invalid_utf8_for_any_boundary():
    text = "naïve café 東京 😀 " * 50
    for limit in range(200):
        out = cut_utf8(text, limit)
        assert len(out.encode("utf-8")) <= limit
        assert text.startswith(out)
        # Maximal: the next character would not have fitted.
        if out != text:
            assert len((out + text[len(out)]).encode("utf-8")) > limit


def test_round_through_f16_is_what_a_caller_would_send():
    v = np.array([0.1, 1 / 3, -0.7071067811865476, 65504.0, 1e-8], dtype=np.float32)
    r = round_through_f16(v)
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r, v.astype(np.float16).astype(np.float32))
    assert r[0] != v[0] and abs(r[0] - v[0]) < 1e-4
    np.testing.assert_array_equal(round_through_f16(r), r)  # idempotent
