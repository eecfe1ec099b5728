"""listMemories cursors: anything that is not a cursor this service wrote is a 400, never a 500 (a cursor
holding an integer past SQLite's 64 bits overflowed in the query)."""

from __future__ import annotations

import base64

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NSID = "garden.engram.listMemories"
INT64_MAX = 2**63 - 1


def b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


async def _list(engram, cursor: str):
    return await engram.get(NSID, {"cursor": cursor, "limit": "5"})


async def test_a_cursor_past_64_bits_is_a_400(engram):
    for raw in ("9223372036854775808:1", "1:9223372036854775808", "-9223372036854775809:1", "1:-1"):
        r = await _list(engram, b64(raw))
        assert r.status == 400, (raw, await r.text())
        assert await r.json() == {"error": "InvalidRequest", "message": "bad cursor"}
    r = await _list(engram, b64(f"{INT64_MAX}:{INT64_MAX}"))
    assert r.status == 200 and (await r.json())["memories"] == []


big = st.integers(min_value=-(2**70), max_value=2**70)
raw_cursors = st.one_of(
    st.tuples(big, big).map(lambda p: f"{p[0]}:{p[1]}"),
    st.text(max_size=40),
    st.tuples(big, big, st.sampled_from(["+", " ", "_", "0x", ":", "\u0663"])).map(
        lambda p: f"{p[2]}{p[0]}:{p[1]}"
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=raw_cursors, encode=st.booleans())
async def test_any_cursor_is_a_page_or_a_400(engram, raw, encode):
    r = await _list(engram, b64(raw) if encode else raw)
    assert r.status in (200, 400), (raw, await r.text())
    if r.status == 400:
        assert (await r.json())["error"] == "InvalidRequest"
    head, _, tail = raw.partition(":")
    numeric = head.lstrip("-").isascii() and head.lstrip("-").isdigit() and tail.isascii() and tail.isdigit()
    if encode and numeric and (abs(int(head)) > INT64_MAX or int(tail) > INT64_MAX):
        assert r.status == 400
