"""Every shim write is all-or-nothing: a request that answers an error has changed nothing in the store.

Golden cases for the inputs that used to leave orphan writes behind (a NUL in a Sim key or workflowId
committed the message, then failed reading it back), and a property test over every shim route that
writes: Sim's POST, PUT and DELETEs of both generations, Memory Bank's upserts and delete. Bodies mix
valid values with junk, NULs, wrong types and oversized strings."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.compat import bearer, start

WF = "4f1c9c1e-6a52-4a8e-9d7f-0a3c2b1e5d44"
WS = "d2b0e7a4-3c11-4f6e-8a9b-5e7c1d2f3a60"


async def fingerprint(engram) -> str:
    """A digest of every memory row and tombstone: equal digests mean nothing was written or deleted."""

    def read(conn):
        rows = conn.execute("SELECT row_id, cid, attrs FROM memories ORDER BY row_id").fetchall()
        generations = conn.execute("SELECT id, generation FROM spaces ORDER BY id").fetchall()
        return repr((rows, generations))

    return hashlib.sha256((await engram.ctx.store.read(read)).encode()).hexdigest()


@pytest.fixture
async def shims(aiohttp_client, settings):
    engram = await start(aiohttp_client, replace(settings, text_search_rate=1000.0, text_search_burst=1000))
    space = await engram.space("atomic")
    token, _ = await engram.key(space.uri)
    seed = [
        (
            "POST",
            "/api/memory",
            {"key": "chat", "type": "agent", "workflowId": WF, "data": {"role": "user", "content": "hi"}},
        ),
        (
            "POST",
            "/api/memory",
            {"key": "chat", "workspaceId": WS, "data": [{"role": "user", "content": "hello"}]},
        ),
        (
            "POST",
            "/memorybank/upsert",
            {
                "documents": [
                    {"id": "doc", "text": "The harbour crane is serviced every spring.", "user_id": "u"}
                ]
            },
        ),
    ]
    for method, path, body in seed:
        resp = await engram.client.request(method, path, json=body, headers=bearer(token))
        assert resp.status in (200, 201), await resp.text()
    return engram, token


async def test_a_nul_in_a_sim_key_or_workflow_is_refused_and_writes_nothing(shims):
    engram, token = shims
    before = await fingerprint(engram)
    bodies = [
        {"key": "a\x00b", "type": "agent", "workflowId": WF, "data": {"role": "user", "content": "x"}},
        {"key": "k", "type": "agent", "workflowId": "w\x00", "data": {"role": "user", "content": "x"}},
        {"key": "k", "type": "agent", "workflowId": WF, "data": {"role": "user", "content": "x\x00"}},
        {"key": "a\x00b", "workspaceId": WS, "data": {"role": "user", "content": "x"}},
    ]
    for body in bodies * 2:  # a retry adds nothing either
        resp = await engram.client.post("/api/memory", json=body, headers=bearer(token))
        payload = await resp.json()
        assert resp.status == 400, payload
        assert "NUL" in str(payload)
    assert await fingerprint(engram) == before


TEXT = st.sampled_from(["", "chat", "x\x00y", "\x00", "a" * 600, "new-chat", WF, WS]) | st.text(max_size=8)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def mostly(valid, junk=TEXT | JSON):
    """Usually a valid value, sometimes junk: most bodies then fail on one field, late in the checks."""
    return st.one_of(valid, valid, valid, junk)


MESSAGE = st.fixed_dictionaries(
    {
        "role": mostly(st.sampled_from(["user", "assistant", "system"])),
        "content": mostly(st.sampled_from(["hello", "a longer message about cranes"])),
    },
    optional={"name": TEXT},
)
KEYS = st.sampled_from(["chat", "new-chat", "other"])
SIM_V1 = st.fixed_dictionaries(
    {
        "key": mostly(KEYS),
        "type": mostly(st.just("agent")),
        "workflowId": mostly(st.just(WF)),
        "data": mostly(MESSAGE),
    }
)
SIM_CURRENT = st.fixed_dictionaries(
    {
        "workspaceId": mostly(st.just(WS)),
        "key": mostly(KEYS),
        "data": mostly(MESSAGE | st.lists(MESSAGE, max_size=3)),
    }
)
DOCUMENT = st.fixed_dictionaries(
    {
        "text": mostly(st.sampled_from(["A note about cranes and the harbour.", "   ", "tiny"])),
        "user_id": mostly(st.sampled_from(["u", "v"])),
    },
    optional={
        "id": mostly(st.sampled_from(["doc", "doc2"])),
        "metadata": mostly(
            st.fixed_dictionaries(
                {},
                optional={
                    "source": mostly(st.sampled_from(["chat", "email"])),
                    "created_at": mostly(st.sampled_from(["2024-05-01", "now", "1674743424"])),
                },
            )
        ),
    },
)
PUT = st.fixed_dictionaries({"data": mostly(MESSAGE), "workspaceId": mostly(st.just(WS))})
PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "workflowId": mostly(st.just(WF), TEXT),
        "workspaceId": mostly(st.just(WS), TEXT),
        "conversationId": mostly(KEYS, TEXT),
    },
)
SEGMENT = st.sampled_from(["chat", "new-chat", "a%00b", "mem_x"])

WRITES = st.one_of(
    st.tuples(st.just("POST"), st.just("/api/memory"), st.just({}), st.one_of(SIM_V1, SIM_CURRENT, JSON)),
    st.tuples(
        st.just("PUT"),
        SEGMENT.map("/api/memory/{}".format),
        st.just({}),
        mostly(PUT),
    ),
    st.tuples(st.just("DELETE"), SEGMENT.map("/api/memory/{}".format), PARAMS, st.none()),
    st.tuples(st.just("DELETE"), st.just("/api/memory"), PARAMS, st.none()),
    st.tuples(
        st.just("POST"),
        st.sampled_from(["/memorybank/upsert", "/memorybank/upsert-action"]),
        st.just({}),
        mostly(st.fixed_dictionaries({"documents": st.lists(DOCUMENT, max_size=3)})),
    ),
    st.tuples(
        st.just("DELETE"),
        st.just("/memorybank/delete"),
        st.just({}),
        st.fixed_dictionaries(
            {"user_id": mostly(st.sampled_from(["u", "v"]))},
            optional={
                "ids": mostly(st.lists(st.sampled_from(["doc", "doc2"]), max_size=2)),
                "delete_all": mostly(st.booleans()),
                "filter": mostly(
                    st.fixed_dictionaries({}, optional={"start_date": mostly(st.just("2024-01-01"))})
                ),
            },
        ),
    ),
)


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=WRITES)
async def test_any_error_answer_leaves_the_store_unchanged(shims, request):
    engram, token = shims
    method, path, params, body = request
    before = await fingerprint(engram)
    kwargs = {"params": params, "headers": bearer(token)}
    if body is not None:
        kwargs["json"] = body
    resp = await engram.client.request(method, path, **kwargs)
    payload = await resp.json()
    assert resp.status < 500, (resp.status, payload)
    if resp.status >= 400:
        assert await fingerprint(engram) == before, (resp.status, payload)


async def test_oversized_content_is_refused_before_anything_is_written(shims):
    engram, token = shims
    before = await fingerprint(engram)
    huge = "x" * 30001
    bodies = [
        {"key": "chat", "type": "agent", "workflowId": WF, "data": {"role": "user", "content": huge}},
        {
            "key": "chat",
            "workspaceId": WS,
            "data": [{"role": "user", "content": "ok"}, {"role": "user", "content": huge}],
        },
    ]
    for body in bodies:
        resp = await engram.client.post("/api/memory", json=body, headers=bearer(token))
        assert resp.status == 400, await resp.text()
    resp = await engram.client.put(
        "/api/memory/chat",
        json={"workspaceId": WS, "data": {"role": "user", "content": huge}},
        headers=bearer(token),
    )
    assert resp.status == 400, await resp.text()
    assert await fingerprint(engram) == before
