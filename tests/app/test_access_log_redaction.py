"""The access log's query redaction skips decoding the redacted values (engram/logs.py); its output must
stay exactly what parsing the whole query and re-encoding it gives."""

from urllib.parse import parse_qsl, urlencode

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.logs import REDACTED_PARAMS, redact_query


def _reference(query_string: str) -> str:
    pairs = parse_qsl(query_string, keep_blank_values=True)
    return urlencode([(k, "[redacted]" if k in REDACTED_PARAMS else v) for k, v in pairs])


# Keys and values built from the characters that matter to the parser: separators, escapes, '+'.
_piece = st.text(alphabet="qvectorkns%2B6F+=&;aZ0-_.~", max_size=12)
_key = st.sampled_from(["q", "vector", "token", "vect%6Fr", "%71", "limit", "space", "q+", ""]) | _piece


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_key, st.one_of(st.none(), _piece)), max_size=6))
def test_redaction_matches_parsing_the_whole_query(parts):
    query = "&".join(key if value is None else f"{key}={value}" for key, value in parts)
    assert redact_query(query) == _reference(query)


def test_an_escaped_key_is_still_redacted():
    assert (
        redact_query("vect%6Fr=AAAA&%71=secret&limit=3") == "vector=%5Bredacted%5D&q=%5Bredacted%5D&limit=3"
    )
