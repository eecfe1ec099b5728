"""Junk in any console query string or form field gets a 4xx page, never a 500."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PAGES = [
    "/console/",
    "/console/space",
    "/console/memory",
    "/console/graph",
    "/console/graph.json",
    "/console/documents",
    "/console/document",
    "/console/keys",
]
PARAMS = [
    "space",
    "q",
    "tags",
    "author",
    "since",
    "limit",
    "cursor",
    "uri",
    "minSimilarity",
    "next",
    "token",
    "id",
]
FORMS = ["/console/keys", "/console/keys/revoke", "/console/login", "/console/login/key"]
FIELDS = ["space", "scope", "label", "id", "token", "api_key", "next"]
values = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=string.ascii_letters + string.digits + "-_=+/:.", max_size=60),
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "501",
            "1e309",
            "nan",
            "at://x",
            "2026-13-45",
            "\x00",
            "at://did:web:engram.test/space/garden.engram.space/alpha",
        ]
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(PAGES), pairs=st.lists(st.tuples(st.sampled_from(PARAMS), values), max_size=6))
async def test_junk_query_strings_never_500(console, path, pairs):
    browser = await console.operator()
    resp = await browser.client.get(
        path,
        params=pairs,
        headers={"Cookie": f"engram_console={browser.cookies['engram_console']}"},
        allow_redirects=False,
    )
    assert resp.status < 500, (path, pairs, await resp.text())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(FORMS), pairs=st.lists(st.tuples(st.sampled_from(FIELDS), values), max_size=6))
async def test_junk_form_fields_never_500(console, path, pairs):
    browser = await console.operator()
    csrf = await browser.csrf("/console/keys")
    data = [*pairs, ("csrf", csrf)]
    headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in browser.cookies.items())}
    resp = await browser.client.post(path, data=data, headers=headers, allow_redirects=False)
    assert resp.status < 500, (path, pairs, await resp.text())
