"""attrs nested deeper than engram stores (engram/store/attrs.py): the line or item is skipped with its
reason and the rest of the batch is kept, by `engram import` and by admin importMemories over HTTP."""

from __future__ import annotations

import json
from dataclasses import replace

import orjson
import pytest

from engram.app import create_app
from engram.auth.admin_signature import sign_admin_request
from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key
from engram.store.attrs import MAX_ATTRS_DEPTH

OPS_DID = "did:plc:deepattrsops000000000000"
IMPORT = "/xrpc/garden.engram.admin.importMemories"


def nested(levels: int) -> dict:
    """An object `levels` levels deep: {"a": {"a": ... {} ...}}."""
    value: dict = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def test_engram_import_skips_a_line_with_too_deep_attrs_and_keeps_the_rest(engram, tmp_path, space_name):
    engram("space", "create", space_name)
    lines = [
        {"text": "before the deep one"},
        {"text": "far too deep", "attrs": nested(300)},  # deeper than orjson can serialise
        {"text": "just too deep", "attrs": nested(MAX_ATTRS_DEPTH + 1)},
        {"text": "as deep as allowed", "attrs": nested(MAX_ATTRS_DEPTH)},
        {"text": "after the deep ones"},
    ]
    path = tmp_path / "deep.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))  # orjson stops at 254 levels
    result = engram("import", space_name, path, "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert report["created"] == 3
    reason = f"attrs are nested more than {MAX_ATTRS_DEPTH} levels deep"
    assert report["skipped"] == [{"line": 2, "reason": reason}, {"line": 3, "reason": reason}]


@pytest.fixture
async def admin(aiohttp_client, settings):
    ops = PrivateKey.generate("ES256")
    save_operator_key(settings.data_dir, OPS_DID, ops)
    settings = replace(settings, admin_dids=frozenset({OPS_DID}))
    client = await aiohttp_client(await create_app(settings))
    return client, settings, ops


def _signed(settings, key, path: str, body: bytes) -> dict:
    headers = {"Content-Type": "application/json"}
    return sign_admin_request(key, OPS_DID, "POST", settings.public_url + path, body, headers)


async def test_admin_import_reports_the_deep_item_and_imports_the_rest(admin):
    client, settings, ops = admin
    create = "/xrpc/garden.engram.admin.createSpace"
    body = orjson.dumps({"name": "deep"})
    assert (await client.post(create, data=body, headers=_signed(settings, ops, create, body))).status == 200
    memories = [{"text": "one"}, {"text": "deep", "attrs": nested(300)}, {"text": "two", "attrs": {"k": [1]}}]
    body = json.dumps({"space": "deep", "memories": memories}).encode()
    r = await client.post(IMPORT, data=body, headers=_signed(settings, ops, IMPORT, body))
    assert r.status == 200, await r.text()
    report = await r.json()
    assert report["created"] == 2
    assert report["skipped"] == [
        {"index": 1, "reason": f"attrs are nested more than {MAX_ATTRS_DEPTH} levels deep"}
    ]
