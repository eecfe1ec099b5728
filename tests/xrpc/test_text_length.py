"""UTF-8 byte lengths and the grapheme-cluster approximation."""

import pytest

from engram.xrpc.text_length import grapheme_count, utf8_len


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("", 0),
        ("hello", 5),
        ("a\r\nb", 3),
        ("é", 1),  # precomposed
        ("e\u0301", 1),  # e + combining acute
        ("👍", 1),
        ("👍🏽", 1),  # skin-tone modifier
        ("👩\u200d👩\u200d👦\u200d👦", 1),  # ZWJ family
        ("❤️", 1),  # heart + variation selector
        ("🇫🇷🇩🇪", 2),  # two flags from four regional indicators
        ("🇫🇷🇩", 2),  # a dangling regional indicator
        ("🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", 1),  # Scotland: tag sequence
        ("नमस्ते", 3),  # Devanagari, Unicode 15.1 rules: न | म | स्ते (virama joins a conjunct)
        ("日本語", 3),
    ],
)
def test_grapheme_count(text, count):
    assert grapheme_count(text) == count


def test_utf8_len_counts_bytes():
    assert utf8_len("abc") == 3
    assert utf8_len("é") == 2
    assert utf8_len("日") == 3
    assert utf8_len("🧠") == 4
    with pytest.raises(ValueError, match="lone surrogates"):
        utf8_len("\ud800")
