"""The JavaScript readings Sim's routes apply, against what JavaScript itself answers (values as node prints
them for `Number(s)`, `Number.parseInt(s)`, `String(v)`, `!!v` and PostgreSQL's LIKE)."""

from __future__ import annotations

import math

import pytest

from engram.compat.sim.params import js_number, js_string, like_matcher, parse_int, truthy


@pytest.mark.parametrize(
    ("text", "number", "integer"),
    [
        ("", 0.0, None),
        (" 3 ", 3.0, 3),
        ("1e2", 100.0, 1),
        ("0x10", 16.0, 16),
        ("1_0", math.nan, 1),
        ("inf", math.nan, None),
        ("Infinity", math.inf, None),
        ("2abc", math.nan, 2),
        (".5", 0.5, None),
        ("0b101", 5.0, 0),
        ("0xg", math.nan, None),
        ("-7", -7.0, -7),
    ],
)
def test_number_and_parse_int_read_text_as_javascript_does(text, number, integer):
    got = js_number(text)
    assert (math.isnan(got) and math.isnan(number)) or got == number
    assert parse_int(text) == integer


def test_truthiness_and_text_columns():
    assert [truthy(v) for v in (None, False, 0, 0.0, "", [], {}, "0", 7, True)] == [
        False, False, False, False, False, True, True, True, True, True,
    ]  # fmt: skip
    assert [js_string(v) for v in ("k", 7, 1.0, 1.5, 1e21, 1e-7, True, [1], {})] == [
        "k", "7", "1", "1.5", "1e+21", "1e-7", "true", None, None,
    ]  # fmt: skip


def test_like_is_postgresqls():
    assert like_matcher("a%b")("a-long-b") and like_matcher("a%b")("ab")
    assert like_matcher("a_b")("axb") and not like_matcher("a_b")("ab")
    assert like_matcher("a\\%b")("a%b") and not like_matcher("a\\%b")("axb")
    assert not like_matcher("chat")("CHAT") and like_matcher("at")("chat")
    assert like_matcher(".*")("x.*y") and not like_matcher(".*")("xy")  # regex characters are literal
