"""Several embedders in one service: each hosted space embeds with its own model, over every path
(docs/embedders.md#several-models)."""

from __future__ import annotations

import dataclasses

import pytest
from support.compat import bearer, start

from engram.embed.multilingual import NAME as E5
from engram.errors import InvalidInput
from engram.service.hybrid import Scope, TextSearch
from engram.service.search import SearchQuery

DOCS = [
    "会議は毎週木曜日の午後三時に行われます。",  # the weekly meeting is on Thursdays at three
    "La receta de la tortilla lleva huevos, patatas y cebolla.",
    "Dana's passport expires at the end of September.",
]


@pytest.fixture
async def engram(aiohttp_client, settings):
    return await start(aiohttp_client, dataclasses.replace(settings, embedder="hashing,multilingual"))


async def test_a_space_created_with_the_multilingual_model_embeds_and_searches_with_it(engram):
    spaces = engram.ctx.services.spaces
    default = await engram.space("plain")
    assert default.config.active.model == "hashing-256"  # the first listed is new spaces' default
    ml = await spaces.create_hosted("ml", model=spaces.hosted_model(E5))
    assert (ml.config.active.model, ml.config.active.dims) == (E5, 384)
    await engram.write(ml.uri, DOCS)
    await engram.write(default.uri, DOCS)

    e5 = engram.ctx.embedder.named(E5)
    hits = (
        await engram.ctx.services.search.search(ml, SearchQuery(q="When is the weekly meeting?", limit=3))
    ).hits
    assert hits[0][0].text == DOCS[0]  # cross-lingual: an English question finds the Japanese memory
    expected = float(
        e5.embed([DOCS[0]], "document")[0] @ e5.embed(["When is the weekly meeting?"], "query")[0]
    )
    assert abs(hits[0][1] / 1000 - expected) < 0.01  # the stored vector is e5's passage vector

    ranked = await engram.ctx.services.ranking.run(
        [Scope(ml)], TextSearch("¿Cuándo es la reunión?"), "hybrid"
    )
    assert ranked.hits[0].memory.text == DOCS[0]

    plain = await engram.ctx.services.search.search(default, SearchQuery(q="passport", limit=1))
    assert plain.hits[0][0].text == DOCS[2]  # the other space still uses the default model

    token, _ = await engram.key(ml.uri, scopes=("read",))
    resp = await engram.client.post(
        "/v1/vector/match", json={"prompt": "tortilla ingredients", "top_k": 1, "embedding_rate": 1},
        headers=bearer(token),
    )  # fmt: skip
    assert resp.status == 200 and (await resp.json())["list"][0]["content"] == DOCS[1]


async def test_a_model_name_the_service_does_not_run_is_refused(engram):
    with pytest.raises(InvalidInput, match="runs no model named"):
        engram.ctx.services.spaces.hosted_model("e5-large")
