"""garden.engram.admin.ingestDocument / listDocuments / getDocument / deleteDocument through the real app
with DID-signed requests, and `engram admin ingest` against a real `engram serve` (docs/documents.md)."""

from __future__ import annotations

import base64
from dataclasses import replace
from urllib.parse import urlencode

import orjson
import pytest
from support import document_files as files

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.admin_signature import sign_admin_request
from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key

OPS_DID = "did:plc:docsopsadmin000000000000"


@pytest.fixture
async def admin(aiohttp_client, settings):
    ops = PrivateKey.generate("ES256")
    save_operator_key(settings.data_dir, OPS_DID, ops)
    settings = replace(settings, admin_dids=frozenset({OPS_DID}))
    client = await aiohttp_client(await create_app(settings))
    space = await client.app[context_key].services.spaces.create_hosted("docs")

    async def call(nsid: str, body: dict | None = None, params: dict | None = None):
        path = f"/xrpc/{nsid}" + (f"?{urlencode(params)}" if params else "")
        raw = orjson.dumps(body) if body is not None else b""
        method = "POST" if body is not None else "GET"
        headers = sign_admin_request(
            ops,
            OPS_DID,
            method,
            settings.public_url + path,
            raw,
            {"Content-Type": "application/json"} if raw else {},
        )
        response = await client.request(method, path, data=raw or None, headers=headers)
        return response.status, await response.json()

    return call, client.app[context_key], space.uri


def content(data: bytes) -> dict:
    return {"$bytes": base64.b64encode(data).decode()}


async def memory_count(ctx) -> int:
    return await ctx.store.read(lambda conn: conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0])


async def test_ingest_list_get_replace_and_delete_a_document(admin):
    call, ctx, _ = admin
    pdf = files.pdf([["The Aurora plan costs twelve dollars."], ["The Vega plan costs forty dollars."]])
    status, out = await call(
        "garden.engram.admin.ingestDocument",
        {"space": "docs", "name": "plans.pdf", "documentId": "plans", "sourceUrl": "https://e.com/plans.pdf",
         "content": content(pdf)},
    )  # fmt: skip
    assert status == 200, out
    assert (out["documentId"], out["kind"], out["pages"], out["chunks"], out["status"]) == (
        "plans",
        "pdf",
        2,
        2,
        "created",
    )
    status, listed = await call("garden.engram.admin.listDocuments", params={"space": "docs"})
    assert status == 200 and [d["documentId"] for d in listed["documents"]] == ["plans"]
    assert listed["documents"][0]["sourceUrl"] == "https://e.com/plans.pdf"
    status, got = await call(
        "garden.engram.admin.getDocument", params={"space": "docs", "documentId": "plans"}
    )
    assert status == 200
    assert [(c["chunkIndex"], c["page"], c["text"]) for c in got["chunks"]] == [
        (0, 1, "The Aurora plan costs twelve dollars."),
        (1, 2, "The Vega plan costs forty dollars."),
    ]
    # re-ingesting the id replaces every chunk
    status, out = await call(
        "garden.engram.admin.ingestDocument",
        {
            "space": "docs",
            "name": "plans.md",
            "documentId": "plans",
            "content": content(b"# Plans\n\nOnly Vega now.\n"),
        },
    )
    assert status == 200 and (out["status"], out["chunks"]) == ("replaced", 1)
    assert await memory_count(ctx) == 1
    status, got = await call(
        "garden.engram.admin.getDocument", params={"space": "docs", "documentId": "plans"}
    )
    assert [c["text"] for c in got["chunks"]] == ["Plans\nOnly Vega now."]
    status, out = await call("garden.engram.admin.deleteDocument", {"space": "docs", "documentId": "plans"})
    assert (status, out) == (200, {"deletedChunks": 1})
    assert await memory_count(ctx) == 0
    status, out = await call("garden.engram.admin.deleteDocument", {"space": "docs", "documentId": "plans"})
    assert status == 404 and out["error"] == "DocumentNotFound"


async def test_refusals_are_xrpc_errors_naming_the_problem_and_write_nothing(admin):
    call, ctx, _ = admin
    cases = [
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600), 400, "UnsupportedFileType", "legacy Office file"),
        (files.zip_bomb("xlsx"), 413, "ZipBomb", "zip bomb"),
        (files.cyclic_pdf(), 400, "UnreadableFile", "cyclic"),
        (b"   \n\n  ", 400, "EmptyDocument", "holds no text"),
    ]
    for data, status, name, words in cases:
        got, out = await call(
            "garden.engram.admin.ingestDocument", {"space": "docs", "name": "f", "content": content(data)}
        )
        assert (got, out["error"]) == (status, name), out
        assert words in out["message"]
    got, out = await call(
        "garden.engram.admin.ingestDocument", {"space": "nope", "name": "f", "content": content(b"hi")}
    )
    assert got == 400 and out["error"] == "UnknownSpace"
    assert await memory_count(ctx) == 0
    status, listed = await call("garden.engram.admin.listDocuments", params={"space": "docs"})
    assert listed == {"documents": []}
