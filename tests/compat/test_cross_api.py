"""One store, several APIs: what a shim writes is an ordinary memory that XRPC and the other shims find,
and what the CLI imports is found through the shims."""

from __future__ import annotations

import asyncio
import os
import sys

import orjson
from support.api import Reader
from support.compat import FACTS, bearer, start

from engram.auth.crypto_keys import PrivateKey

WF = "wf-support"


async def sim_add(engram, token, key, role, content, workflow=WF):
    body = {"key": key, "type": "agent", "data": {"role": role, "content": content}, "workflowId": workflow}
    resp = await engram.client.post("/api/memory", json=body, headers=bearer(token))
    assert resp.status in (200, 201), await resp.text()
    return (await resp.json())["data"]


async def gptbots(engram, token, prompt, rate=0.0, **extra):
    body = {"prompt": prompt, "top_k": 10, "embedding_rate": rate, **extra}
    resp = await engram.client.post("/v1/vector/match", json=body, headers=bearer(token))
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_a_sim_conversation_is_listed_and_searched_over_signed_xrpc(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("support")
    token, _ = await engram.key(space.uri)
    await sim_add(engram, token, "ticket-9", "user", "My invoice for October shows the wrong VAT number.")
    await sim_add(engram, token, "ticket-9", "assistant", "I have corrected the VAT number on the invoice.")
    reader = Reader(engram.client, engram.ctx, space.uri, PrivateKey.generate("ES256"))
    listed = await (await reader.get("garden.engram.listMemories")).json()
    assert {m["text"] for m in listed["memories"]} == {
        "My invoice for October shows the wrong VAT number.",
        "I have corrected the VAT number on the invoice.",
    }
    found = await (await reader.search(q="invoice VAT number")).json()
    assert len(found["memories"]) == 2
    memories, _ = await engram.ctx.services.memories.list(space.uri)
    assert sorted((m.attrs["conversationKey"], m.attrs["sequence"], m.attrs["role"]) for m in memories) == [
        ("ticket-9", 0, "user"),
        ("ticket-9", 1, "assistant"),
    ]


async def test_keyword_scores_follow_writes_and_deletes_from_any_api(aiohttp_client, settings):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("mixed")
    token, _ = await engram.key(space.uri)
    await engram.write(space.uri, FACTS)  # through the service layer (what XRPC import and the CLI use)
    row = await sim_add(engram, token, "chat", "user", "The Lisbon offsite budget is capped at 12k.")
    hits = await gptbots(engram, token, "Lisbon")
    assert {i["content"] for i in hits["list"]} == {FACTS[4], "The Lisbon offsite budget is capped at 12k."}
    semantic = await gptbots(engram, token, "Postgres version in production", rate=1.0)
    assert semantic["list"][0]["content"] == FACTS[1]
    resp = await engram.client.delete(
        f"/api/memory/{row['key']}", params={"workflowId": WF}, headers=bearer(token)
    )
    assert resp.status == 200
    assert [i["content"] for i in (await gptbots(engram, token, "Lisbon"))["list"]] == [FACTS[4]]


async def test_an_engram_import_is_found_through_gptbots_and_sim(aiohttp_client, settings, tmp_path):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("imported")
    token, _ = await engram.key(space.uri)
    lines = [
        {"text": "The lighthouse keeper logs every storm at 3am.", "source": "logbook.md"},
        {
            "text": "Remind me to water the ferns on Fridays.",
            "attrs": {
                "workflowId": "wf-home",
                "conversationKey": "plants",
                "sequence": 0,
                "role": "user",
                "simId": "mem_0123456789abcdef0123456789abcdef",
            },
        },
    ]
    path = tmp_path / "import.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")} | {
        "ENGRAM_DATA_DIR": str(settings.data_dir),
        "ENGRAM_EMBEDDER": "hashing",
        "ENGRAM_PUBLIC_URL": settings.public_url,
        "ENGRAM_LOG_LEVEL": "warning",
    }
    if settings.database_url:  # the same store as the app under test (TEST_STORE_BACKEND=postgres)
        env["ENGRAM_DATABASE_URL"] = settings.database_url
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "engram",
        "import",
        "imported",
        str(path),
        "--json",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert orjson.loads(out)["created"] == 2

    hit = (await gptbots(engram, token, "lighthouse storm", rate=0.5))["list"][0]
    assert (hit["content"], hit["document_name"]) == (lines[0]["text"], "logbook.md")
    resp = await engram.client.get("/api/memory", params={"workflowId": "wf-home"}, headers=bearer(token))
    [row] = (await resp.json())["data"]["memories"]
    assert (row["id"], row["key"], row["data"]) == (
        "mem_0123456789abcdef0123456789abcdef",
        "plants",
        [{"role": "user", "content": lines[1]["text"]}],
    )


async def test_a_memory_bank_document_is_found_by_gptbots_data_id_and_by_signed_search(
    aiohttp_client, settings
):
    engram = await start(aiohttp_client, settings)
    space = await engram.space("handbook")
    token, _ = await engram.key(space.uri)
    document = {
        "id": "onboarding-7",
        "user_id": "people-ops",
        "text": "New engineers get production read access after their second week. "
        "The on-call rotation starts in the second month, shadowing first.",
        "metadata": {"source": "file", "author": "people-ops"},
    }
    upsert = await engram.client.post(
        "/memorybank/upsert", json={"documents": [document]}, headers=bearer(token)
    )
    assert upsert.status == 200, await upsert.text()
    assert (await upsert.json())["ids"] == ["onboarding-7"]
    await engram.write(space.uri, FACTS)  # other memories the data_id filter must leave out

    hits = await gptbots(engram, token, "when does on-call start", rate=0.5, data_ids=["onboarding-7"])
    assert hits["total"] >= 1
    assert {hit["data_id"] for hit in hits["list"]} == {"onboarding-7"}
    assert "on-call rotation" in " ".join(hit["content"] for hit in hits["list"])
    none = await gptbots(engram, token, "when does on-call start", rate=0.5, data_ids=["no-such-doc"])
    assert none["total"] == 0

    reader = Reader(engram.client, engram.ctx, space.uri, PrivateKey.generate("ES256"))
    found = await (await reader.search(q="on-call rotation shadowing")).json()
    assert any("on-call rotation" in m["text"] for m in found["memories"])
