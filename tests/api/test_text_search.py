"""Text search (`q` without a vector) over signed HTTP: gates, limits, and that it finds what it should."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from support.api import MODEL, Reader, settings_with

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.search.vectors import encode_query_vector
from engram.store import MemoryWrite

NSID = "garden.engram.searchMemories"

FACTS = [
    "Dana prefers pnpm over npm in the web-dashboard repository because lockfile diffs are smaller.",
    "Production Postgres runs version 16.2; staging is still on 15.4.",
    "Henrik must approve every change to token handling in the auth gateway.",
    "The team's weekly sync moved from Monday to Tuesday at 10:00.",
    "Dana's passport expires at the end of September, before the Lisbon trip.",
]


async def start(aiohttp_client, settings, name="notes", authority=None) -> Reader:
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted(name, authority=authority)
    await ctx.services.memories.write(
        space.uri, [MemoryWrite(author=ctx.settings.service_did, text=t) for t in FACTS]
    )
    return Reader(client, ctx, space.uri, PrivateKey.generate("ES256"))


async def test_text_search_equals_vector_search_of_the_same_query(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings)
    by_text = await (await reader.search(q="package manager preference")).json()
    embedder = reader.ctx.embedder
    vector = embedder.embed(["package manager preference"], "query")[0]
    active = reader.ctx.services.spaces.default_model()
    by_vector = await (
        await reader.search(vector=encode_query_vector(vector), model=active.model, modelDigest=active.digest)
    ).json()
    assert by_text == by_vector
    assert by_text["memories"][0]["text"] == FACTS[0]


async def test_filters_apply_to_text_search(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings)
    body = await (await reader.search(q="postgres version", author="did:plc:nobody")).json()
    assert body["memories"] == []


async def test_model_not_hosted(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings)
    other = await reader.ctx.services.spaces.create_hosted("foreign", model=MODEL)
    r = await reader.search(space=other.uri, q="anything")
    assert r.status == 400 and (await r.json())["error"] == "ModelNotHosted"


async def test_text_search_not_allowed_for_other_authorities(aiohttp_client, settings):
    reader = await start(
        aiohttp_client, settings_with(settings, text_search_authorities=frozenset({"did:plc:else"}))
    )
    r = await reader.search(q="postgres")
    assert r.status == 403 and (await r.json())["error"] == "TextSearchNotAllowed"


async def test_text_search_disabled_is_invalid_request(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings_with(settings, text_search=False))
    r = await reader.search(q="postgres")
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"


async def test_query_longer_than_1000_characters(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings)
    r = await reader.search(q="x" * 1001)
    assert r.status == 400 and "1000" in (await r.json())["message"]
    assert (await reader.search(q="x" * 1000)).status == 200


async def test_neither_vector_nor_q(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings)
    r = await reader.search()
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"


async def test_per_authority_limit_is_shared_by_its_spaces_and_spares_vector_search(aiohttp_client, settings):
    from engram.auth.identity import save_operator_key

    owner = "did:plc:ownerownerownerownerowner"
    save_operator_key(settings.data_dir, owner, PrivateKey.generate("ES256K"))
    reader = await start(
        aiohttp_client, settings_with(settings, text_search_rate=0.01, text_search_burst=2), authority=owner
    )
    second = await reader.ctx.services.spaces.create_hosted("second", authority=owner)
    assert (await reader.search(q="one")).status == 200
    assert (await reader.search(space=second.uri, q="two")).status == 200
    r = await reader.search(space=second.uri, q="three")
    assert r.status == 429 and (await r.json())["error"] == "RateLimitExceeded"
    assert "Retry-After" in r.headers
    active = reader.ctx.services.spaces.default_model()
    vector = encode_query_vector(np.ones(active.dims, dtype=np.float32))
    assert (await reader.search(vector=vector, model=active.model, modelDigest=active.digest)).status == 200


async def test_another_authority_has_its_own_bucket(aiohttp_client, settings):
    from engram.auth.identity import save_operator_key

    operator = "did:plc:operatorop3rat0r0perat0r"
    save_operator_key(settings.data_dir, operator, PrivateKey.generate("ES256K"))
    reader = await start(aiohttp_client, settings_with(settings, text_search_rate=0.01, text_search_burst=1))
    theirs = await reader.ctx.services.spaces.create_hosted("theirs", authority=operator)
    assert (await reader.search(q="one")).status == 200
    assert (await reader.search(q="two")).status == 429
    assert (await reader.search(space=theirs.uri, q="three")).status == 200


async def test_auth_is_verified_before_any_embedding(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings_with(settings, text_search_burst=1, text_search_rate=0.01))
    r = await reader.client.get(f"/xrpc/{NSID}", params={"space": reader.space, "q": "hello"})
    assert r.status == 401
    assert (await reader.search(q="hello")).status == 200  # the unsigned request did not spend the token


async def test_embedder_busy_when_every_slot_is_taken_and_none_may_wait(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings_with(settings, embed_concurrency=1, embed_queue=0))
    slots = reader.ctx.services.search.text.slots
    await slots.enter("someone else")
    try:
        r = await reader.search(q="postgres")
        assert r.status == 503 and (await r.json())["error"] == "EmbedderBusy"
    finally:
        slots.leave()
    assert (await reader.search(q="postgres")).status == 200


async def test_a_query_waits_its_turn_for_a_slot_instead_of_being_turned_away(aiohttp_client, settings):
    reader = await start(aiohttp_client, settings_with(settings, embed_concurrency=1, embed_wait_ms=60_000))
    slots = reader.ctx.services.search.text.slots
    await slots.enter("someone else")
    waiting = asyncio.ensure_future(reader.search(q="postgres"))
    while slots.waiting == 0:  # the request reached the queue
        await asyncio.sleep(0.01)
    assert not waiting.done()
    slots.leave()  # the slot passes to it
    assert (await waiting).status == 200


@pytest.fixture
def builtin_settings(settings):
    return settings_with(settings, embedder="builtin")


async def test_embedder_busy_under_real_concurrent_load(aiohttp_client, builtin_settings):
    reader = await start(
        aiohttp_client,
        settings_with(builtin_settings, embed_concurrency=1, embed_queue=2, text_search_burst=100),
    )
    long_query = " ".join(["which database version runs in production and staging"] * 18)[:1000]
    results = await asyncio.gather(*(reader.search(q=long_query) for _ in range(12)))
    statuses = sorted(r.status for r in results)
    assert 200 in statuses and 503 in statuses, statuses
    errors = {(await r.json())["error"] for r in results if r.status == 503}
    assert errors == {"EmbedderBusy"}


async def test_paraphrased_question_finds_its_memory(aiohttp_client, builtin_settings):
    reader = await start(aiohttp_client, builtin_settings)
    questions = {
        "Which JavaScript package manager does Dana like?": FACTS[0],
        "what version of postgres is used in prod": FACTS[1],
        "who signs off on auth token changes": FACTS[2],
        "when is Dana's passport no longer valid": FACTS[4],
    }
    for question, expected in questions.items():
        body = await (await reader.search(q=question, limit="1")).json()
        assert body["memories"][0]["text"] == expected, question


async def test_spaces_hosted_under_engrams_own_did_have_a_bucket_each(aiohttp_client, settings):
    """They all share engram's DID as authority, but belong to different owners: one space's readers must
    not use up another's text budget."""
    reader = await start(aiohttp_client, settings_with(settings, text_search_rate=0.01, text_search_burst=2))
    other = await reader.ctx.services.spaces.create_hosted("other")
    assert [(await reader.search(q=f"q{i}")).status for i in range(3)] == [200, 200, 429]
    assert (await reader.search(space=other.uri, q="mine")).status == 200


async def test_a_query_turned_away_busy_spends_no_text_token(aiohttp_client, settings):
    reader = await start(
        aiohttp_client,
        settings_with(
            settings, embed_concurrency=1, embed_queue=0, text_search_rate=0.01, text_search_burst=2
        ),
    )
    slots = reader.ctx.services.search.text.slots
    await slots.enter("someone else")  # an embedding in flight
    try:
        for _ in range(5):
            r = await reader.search(q="postgres")
            assert r.status == 503 and (await r.json())["error"] == "EmbedderBusy"
    finally:
        slots.leave()
    assert [(await reader.search(q=f"q{i}")).status for i in range(3)] == [200, 200, 429]
