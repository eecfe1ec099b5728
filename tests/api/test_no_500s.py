"""Malformed input of any shape gets a 4xx envelope, never a 500 (DESIGN §10)."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NSIDS = [
    "garden.engram.searchMemories",
    "garden.engram.getMemory",
    "garden.engram.listMemories",
    "garden.engram.getSpaceStatus",
    "garden.engram.getMemoryGraph",
    "garden.engram.exportSpace",
]
PARAMS = [
    "space",
    "vector",
    "model",
    "modelDigest",
    "q",
    "limit",
    "author",
    "tags",
    "since",
    "uri",
    "cursor",
    "neighbors",
    "minSimilarity",
]
values = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=string.ascii_letters + string.digits + "-_=+/", max_size=60),
    st.sampled_from(
        ["", "0", "-1", "51", "1e9", "true", "did:plc:x", "at://x", "2026-13-45T99:99:99Z", "\x00"]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    nsid=st.sampled_from(NSIDS),
    pairs=st.lists(st.tuples(st.sampled_from(PARAMS), values), max_size=6),
    keep_space=st.booleans(),
)
async def test_signed_queries_with_junk_params_never_500(engram, nsid, pairs, keep_space):
    params = [(k, v) for k, v in pairs if k != "space"]
    if keep_space:
        params.append(("space", engram.space))
    r = await engram.client.get(f"/xrpc/{nsid}", params=params, headers=engram.headers())
    assert r.status < 500, (nsid, params, await r.text())
    if r.status >= 400:
        body = await r.json()
        assert set(body) == {"error", "message"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode)),
    content_type=st.sampled_from(["application/json", "text/plain", "application/octet-stream", ""]),
)
async def test_junk_procedure_bodies_never_500(engram, body, content_type):
    headers = {**engram.headers(), **({"Content-Type": content_type} if content_type else {})}
    for nsid in ("garden.engram.warmSpace", "com.atproto.space.notifySpaceDeleted"):
        r = await engram.client.post(f"/xrpc/{nsid}", data=body, headers=headers)
        assert r.status < 500, (nsid, body, await r.text())
