"""getMemory, listMemories, getSpaceStatus, warmSpace, exportSpace and getMemoryGraph over signed HTTP."""

from __future__ import annotations

import io

import numpy as np
from support.api import MODEL, seed, unit

from engram.service.export import open_export


async def test_get_memory_and_not_found(engram):
    records = await seed(engram.ctx, engram.space, unit(np.random.default_rng(0), 3, MODEL.dims))
    r = await engram.get("garden.engram.getMemory", {"uri": records[1].uri})
    assert r.status == 200
    memory = (await r.json())["memory"]
    assert memory["uri"] == records[1].uri and memory["cid"] == records[1].cid
    assert memory["text"] == "memory number 1" and "similarity" not in memory
    r = await engram.get("garden.engram.getMemory", {"uri": records[1].uri[:-3] + "aaa"})
    assert r.status == 404 and (await r.json())["error"] == "MemoryNotFound"


async def test_list_memories_newest_first_with_cursor_and_filters(engram):
    rng = np.random.default_rng(0)
    created = [f"2026-02-{d:02d}T10:00:00.000Z" for d in range(1, 8)]
    await seed(
        engram.ctx,
        engram.space,
        unit(rng, 7, MODEL.dims),
        created=created,
        authors=["did:plc:a" if i < 4 else "did:plc:b" for i in range(7)],
        tags=[["x"] if i % 2 else [] for i in range(7)],
    )
    seen, cursor = [], None
    while True:
        params = {"limit": "3"} | ({"cursor": cursor} if cursor else {})
        body = await (await engram.get("garden.engram.listMemories", params)).json()
        seen += [m["createdAt"] for m in body["memories"]]
        cursor = body.get("cursor")
        if not cursor:
            break
    assert seen == sorted(created, reverse=True)
    body = await (await engram.get("garden.engram.listMemories", {"author": "did:plc:a", "tags": "x"})).json()
    assert [m["createdAt"] for m in body["memories"]] == [created[3], created[1]]
    r = await engram.get("garden.engram.listMemories", {"cursor": "garbage!"})
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"


async def test_space_status_reports_model_counts_and_skipped(engram):
    from engram.store import MemoryWrite

    await seed(engram.ctx, engram.space, unit(np.random.default_rng(0), 5, MODEL.dims))
    await engram.ctx.services.memories.write(
        engram.space, [MemoryWrite(author="did:plc:novector", text="no vector")]
    )
    body = await (await engram.get("garden.engram.getSpaceStatus")).json()
    assert body["memories"] == 5
    assert body["skipped"] == [{"author": "did:plc:novector", "count": 1}]
    assert body["active"] == {"model": MODEL.model, "modelDigest": MODEL.digest, "dims": MODEL.dims}
    assert body["config"]["model"] == MODEL.model


async def test_warm_space_returns_at_once_and_loads(engram):
    await seed(engram.ctx, engram.space, unit(np.random.default_rng(0), 50, MODEL.dims))
    r = await engram.post("garden.engram.warmSpace", {"space": engram.space})
    assert r.status == 200 and await r.json() == {}
    await engram.ctx.index.flush()
    assert engram.ctx.index.is_loaded(engram.space, MODEL.key)
    r = await engram.post("garden.engram.warmSpace", {"space": engram.space.replace("api-tests", "zzz")})
    assert r.status == 400 and (await r.json())["error"] == "UnknownSpace"


async def test_export_space_is_a_tar_with_every_memory_and_vector(engram):
    vectors = unit(np.random.default_rng(0), 20, MODEL.dims)
    records = await seed(engram.ctx, engram.space, vectors)
    r = await engram.get("garden.engram.exportSpace")
    assert r.status == 200 and r.headers["Content-Type"] == "application/x-tar"
    # streamed (prepared by the handler itself): CORS headers all the same
    assert (
        r.headers["Access-Control-Allow-Origin"] == "*"
        and "Retry-After" in r.headers["Access-Control-Expose-Headers"]
    )
    reader = open_export(io.BytesIO(await r.read()))
    assert reader.manifest["space"] == engram.space and reader.manifest["memories"] == 20
    import orjson

    lines = [orjson.loads(line) for _, line in reader.lines]
    assert sorted(line["rkey"] for line in lines) == sorted(rec.rkey for rec in records)
    assert all(line["embedding"]["dims"] == MODEL.dims for line in lines)


async def test_memory_graph_links_similar_memories(engram):
    rng = np.random.default_rng(5)
    base = unit(rng, 3, MODEL.dims)
    vectors = np.concatenate([base + 0.05 * unit(rng, 3, MODEL.dims) for _ in range(2)])  # 3 close pairs
    await seed(engram.ctx, engram.space, vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    r = await engram.get("garden.engram.getMemoryGraph", {"neighbors": "1", "minSimilarity": "0.9"})
    assert r.status == 200, await r.text()
    body = await r.json()
    assert len(body["nodes"]) == 6
    texts = [n["text"] for n in body["nodes"]]
    pairs = {frozenset((texts[e["a"]], texts[e["b"]])) for e in body["edges"]}
    assert pairs == {frozenset((f"memory number {i}", f"memory number {i + 3}")) for i in range(3)}
    assert all(e["a"] < e["b"] and 900 <= e["similarity"] <= 1000 for e in body["edges"])
    r = await engram.get("garden.engram.getMemoryGraph", {"minSimilarity": "2"})
    assert r.status == 400 and "minSimilarity" in (await r.json())["message"]
