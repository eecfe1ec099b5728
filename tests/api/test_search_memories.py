"""searchMemories through HTTP with signed requests: results, filters, every lexicon error, malformed input."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest
from support.api import MODEL, seed, unit, vector_params

from engram.store import ModelSpec

NSID = "garden.engram.searchMemories"


def oracle(vectors: np.ndarray, query: np.ndarray, k: int, allowed=None) -> list[int]:
    """Brute force over the fp16-rounded stored vectors; ties broken by position (row order)."""
    stored = vectors.astype(np.float16).astype(np.float32)
    stored /= np.linalg.norm(stored, axis=1, keepdims=True)
    scores = stored @ query
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    if allowed is not None:
        order = [i for i in order if allowed[i]]
    return order[:k]


async def test_results_match_brute_force_with_filters(engram):
    rng = np.random.default_rng(7)
    vectors = unit(rng, 300, MODEL.dims)
    authors = [f"did:plc:author{i % 3}" for i in range(300)]
    tags = [["even"] if i % 2 == 0 else ["odd"] for i in range(300)]
    records = await seed(engram.ctx, engram.space, vectors, authors=authors, tags=tags)
    uri_to_index = {r.uri: i for i, r in enumerate(records)}
    query = unit(rng, 1, MODEL.dims)[0]
    q16 = query.astype(np.float16).astype(np.float32)
    q16 /= np.linalg.norm(q16)

    r = await engram.search(**vector_params(query), limit="10")
    assert r.status == 200, await r.text()
    body = await r.json()
    got = [uri_to_index[m["uri"]] for m in body["memories"]]
    assert got == oracle(vectors, q16, 10)
    assert "approximate" not in body
    sims = [m["similarity"] for m in body["memories"]]
    assert sims == sorted(sims, reverse=True) and all(0 <= s <= 1000 for s in sims)
    assert r.headers["RateLimit-Limit"] and "RateLimit-Remaining" in r.headers

    r = await engram.search(**vector_params(query), limit="5", author="did:plc:author1", tags="even")
    body = await r.json()
    allowed = [authors[i] == "did:plc:author1" and i % 2 == 0 for i in range(300)]
    assert [uri_to_index[m["uri"]] for m in body["memories"]] == oracle(vectors, q16, 5, allowed)

    r = await engram.search(**vector_params(query), author="did:plc:nobody")
    assert (await r.json())["memories"] == []


async def test_since_filter_is_inclusive(engram):
    rng = np.random.default_rng(1)
    vectors = unit(rng, 5, MODEL.dims)
    created = [f"2026-0{m}-01T00:00:00.000Z" for m in range(1, 6)]
    await seed(engram.ctx, engram.space, vectors, created=created)
    r = await engram.search(**vector_params(vectors[0]), since="2026-03-01T00:00:00.000Z")
    got = sorted(m["createdAt"] for m in (await r.json())["memories"])
    assert got == created[2:]


@pytest.mark.parametrize(
    "mutate,needle",
    [
        (lambda v: v.replace(v[3], "+", 1), "base64url"),
        (lambda v: v + "=", "padding"),
        (
            lambda v: base64.urlsafe_b64encode(base64.urlsafe_b64decode(v + "=")[:-1]).decode().rstrip("="),
            "float16",
        ),
        (lambda v: v[:-2], "length"),
        (lambda v: v + "!", "base64url"),
        (lambda v: "", "vector"),
    ],
)
async def test_malformed_vectors_are_refused_naming_the_problem(engram, mutate, needle):
    good = vector_params(unit(np.random.default_rng(0), 1, MODEL.dims)[0])
    r = await engram.search(**{**good, "vector": mutate(good["vector"])})
    assert r.status == 400
    body = await r.json()
    assert body["error"] == "InvalidRequest"
    assert needle in body["message"]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "signaling NaN"])
async def test_non_finite_vectors_are_refused(engram, bad):
    v = np.ones(MODEL.dims, dtype=np.float16)
    if bad == "signaling NaN":  # a float16 bit pattern numpy's ufuncs would warn about (pytest: an error)
        v.view("<u2")[3] = 0x7C01
    else:
        v[3] = bad
    encoded = base64.urlsafe_b64encode(v.astype("<f2").tobytes()).decode().rstrip("=")
    r = await engram.search(vector=encoded, model=MODEL.model, modelDigest=MODEL.digest)
    assert r.status == 400
    assert "NaN or infinity" in (await r.json())["message"] or "finite" in (await r.json())["message"]


async def test_model_mismatches(engram):
    v = unit(np.random.default_rng(0), 1, MODEL.dims)[0]
    cases = [
        {**vector_params(v), "model": "other-model"},
        {**vector_params(v), "modelDigest": "sha256:other"},
        vector_params(unit(np.random.default_rng(0), 1, MODEL.dims + 1)[0]),
    ]
    for params in cases:
        r = await engram.search(**params)
        assert r.status == 400
        assert (await r.json())["error"] == "ModelMismatch"


async def test_vector_without_model_is_invalid(engram):
    v = unit(np.random.default_rng(0), 1, MODEL.dims)[0]
    r = await engram.search(vector=vector_params(v)["vector"])
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"


async def test_unknown_and_deleted_spaces(engram):
    unknown = engram.space.replace("api-tests", "nope")
    r = await engram.search(space=unknown, **vector_params(np.ones(MODEL.dims)))
    assert r.status == 400 and (await r.json())["error"] == "UnknownSpace"
    await engram.ctx.services.spaces.delete(engram.space)
    r = await engram.search(**vector_params(np.ones(MODEL.dims)))
    assert r.status == 400 and (await r.json())["error"] == "UnknownSpace"


async def test_unknown_space_is_refused_before_auth(engram):
    r = await engram.client.get(f"/xrpc/{NSID}", params={"space": engram.space.replace("api-tests", "x")})
    assert r.status == 400 and (await r.json())["error"] == "UnknownSpace"
    r = await engram.client.get(f"/xrpc/{NSID}", params={"space": engram.space})
    assert r.status == 401 and (await r.json())["error"] == "AuthRequired"


async def test_no_model(engram):
    from engram.store import spaces as store_spaces

    uri = engram.space.replace("api-tests", "unconfigured")
    await engram.ctx.store.write(store_spaces.create_space, uri, "hosted")
    r = await engram.search(space=uri, **vector_params(np.ones(MODEL.dims)))
    assert r.status == 400 and (await r.json())["error"] == "NoModel"


async def test_limit_bounds(engram):
    v = vector_params(np.ones(MODEL.dims))
    for limit in ("0", "51", "ten"):
        r = await engram.search(**v, limit=limit)
        assert r.status == 400 and "limit" in (await r.json())["message"]


async def test_wrong_audience_is_refused(engram):
    headers = engram.headers(audience="did:web:someone-else.example")
    r = await engram.client.get(
        f"/xrpc/{NSID}", params={"space": engram.space, **vector_params(np.ones(16))}, headers=headers
    )
    assert r.status == 401 and (await r.json())["error"] == "BadSpaceSignature"


async def test_credential_for_another_space_is_refused(engram):
    other = await engram.ctx.services.spaces.create_hosted("other", model=MODEL)
    headers = engram.headers(space=other.uri)
    r = await engram.client.get(
        f"/xrpc/{NSID}", params={"space": engram.space, **vector_params(np.ones(16))}, headers=headers
    )
    assert r.status == 401 and (await r.json())["error"] == "InvalidToken"


async def test_model_change_keeps_old_vectors_out_of_the_new_index(engram):
    rng = np.random.default_rng(3)
    await seed(engram.ctx, engram.space, unit(rng, 4, MODEL.dims))
    new = ModelSpec("new-model", "sha256:new", 8)
    await engram.ctx.services.spaces.configure(engram.space, new)
    r = await engram.search(**vector_params(unit(rng, 1, 8)[0], new))
    assert r.status == 200 and (await r.json())["memories"] == []
    r = await engram.get("garden.engram.getSpaceStatus")
    status = await r.json()
    assert status["memories"] == 0 and status["skipped"] == [
        {"author": engram.ctx.settings.service_did, "count": 4}
    ]
