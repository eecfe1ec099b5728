"""Remote admin (garden.engram.admin.*): DID-signed requests through the real app, and `engram admin`."""

from __future__ import annotations

import tarfile
import time
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from engram.app import create_app
from engram.auth.admin_signature import sign_admin_request
from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key

OPS_DID = "did:plc:cliopsadmin0000000000000"  # the server fixture's admin DID (conftest.py)
OTHER_DID = "did:plc:clinotanadmin00000000000"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memories.jsonl"
CREATE = "/xrpc/garden.engram.admin.createSpace"


@pytest.fixture
async def admin(aiohttp_client, settings):
    """The app with an allowed operator DID and a second, not allowed, DID whose keys engram holds (so both
    resolve offline); returns (client, settings, allowed key, other key)."""
    ops, other = PrivateKey.generate("ES256"), PrivateKey.generate("ES256K")
    save_operator_key(settings.data_dir, OPS_DID, ops)
    save_operator_key(settings.data_dir, OTHER_DID, other)
    settings = replace(settings, admin_dids=frozenset({OPS_DID}))
    return await aiohttp_client(await create_app(settings)), settings, ops, other


def _signed(settings, key, did, path, body: bytes = b"", method="POST", **kw) -> dict:
    return sign_admin_request(
        key,
        did,
        method,
        settings.public_url + path,
        body,
        {"Content-Type": "application/json"} if body else {},
        **kw,
    )


async def test_a_signed_request_from_an_allowed_did_works(admin):
    client, settings, ops, _ = admin
    body = orjson.dumps({"name": "ops-notes"})
    r = await client.post(CREATE, data=body, headers=_signed(settings, ops, OPS_DID, CREATE, body))
    assert r.status == 200, await r.text()
    space = (await r.json())["space"]
    assert space["uri"] == f"at://{settings.service_did}/space/garden.engram.space/ops-notes"
    assert space["config"]["model"] == "hashing-256"

    path = "/xrpc/garden.engram.admin.importMemories"
    batch = orjson.dumps(
        {"space": "ops-notes", "memories": [{"text": "one"}, {"tags": ["no text"]}, {"text": "two"}]}
    )
    r = await client.post(path, data=batch, headers=_signed(settings, ops, OPS_DID, path, batch))
    report = await r.json()
    assert (report["created"], report["skipped"]) == (
        2,
        [{"index": 1, "reason": "text is required and must be a non-empty string"}],
    )

    path = "/xrpc/garden.engram.admin.listSpaces"
    r = await client.get(path, headers=_signed(settings, ops, OPS_DID, path, method="GET"))
    assert r.status == 200
    assert [(s["name"], s["memories"]) for s in (await r.json())["spaces"]] == [("ops-notes", 2)]


async def test_unsigned_replayed_stale_wrong_did_and_tampered_requests_are_refused(admin):
    client, settings, ops, other = admin
    body = orjson.dumps({"name": "refused"})

    r = await client.post(CREATE, data=body, headers={"Content-Type": "application/json"})
    assert (r.status, (await r.json())["error"]) == (401, "BadAdminSignature")

    headers = _signed(settings, ops, OPS_DID, CREATE, body)
    first = await client.post(CREATE, data=body, headers=headers)
    assert first.status == 200
    replay = await client.post(CREATE, data=body, headers=headers)
    assert (replay.status, (await replay.json())["error"]) == (401, "BadAdminSignature")
    assert "nonce already used" in (await replay.json())["message"]

    stale = _signed(settings, ops, OPS_DID, CREATE, body, now=lambda: time.time() - 600)
    r = await client.post(CREATE, data=body, headers=stale)
    assert (r.status, (await r.json())["error"]) == (401, "BadAdminSignature")

    r = await client.post(CREATE, data=body, headers=_signed(settings, other, OTHER_DID, CREATE, body))
    assert (r.status, (await r.json())["error"]) == (403, "Forbidden")

    impostor = PrivateKey.generate("ES256")  # claims the allowed DID with a key that is not its #atproto key
    r = await client.post(CREATE, data=body, headers=_signed(settings, impostor, OPS_DID, CREATE, body))
    assert (r.status, (await r.json())["error"]) == (401, "BadAdminSignature")

    tampered = orjson.dumps({"name": "evil"})
    r = await client.post(CREATE, data=tampered, headers=_signed(settings, ops, OPS_DID, CREATE, body))
    assert (r.status, (await r.json())["error"]) == (401, "BadAdminSignature")

    other_method = "/xrpc/garden.engram.admin.deleteSpace"  # a signature is bound to its URL
    valid_there = orjson.dumps({"space": "at://did:plc:ops/space/garden.engram.space/refused"})
    signed_for_create = _signed(settings, ops, OPS_DID, CREATE, valid_there)
    r = await client.post(other_method, data=valid_there, headers=signed_for_create)
    assert r.status == 401
    # the answer says which URL the server checked the signature against (the commonest mistake is
    # signing for another spelling of the host than the server's public URL)
    message = (await r.json())["message"]
    assert f"POST {settings.public_url}{other_method}" in message and settings.public_url in message
    # a body the method's lexicon refuses is a 400 before the signature is looked at (and claims no nonce)
    r = await client.post(
        other_method, data=body, headers=_signed(settings, ops, OPS_DID, other_method, body)
    )
    assert (r.status, (await r.json())["error"]) == (400, "InvalidRequest")


async def test_admin_is_off_without_admin_dids(aiohttp_client, settings):
    client = await aiohttp_client(await create_app(settings))
    key = PrivateKey.generate("ES256")
    body = orjson.dumps({"name": "x"})
    r = await client.post(CREATE, data=body, headers=_signed(settings, key, OPS_DID, CREATE, body))
    assert r.status == 403 and "ENGRAM_ADMIN_DIDS" in (await r.json())["message"]


def test_engram_admin_runs_the_operator_commands_remotely(engram, server, space_name, tmp_path):
    base = ("admin", "--remote", server.url, "--key", server.ops_key_file, "--did", OPS_DID)
    created = engram(*base, "space", "create", space_name)
    assert created.code == 0, created.err
    uri = created.out.strip()
    # The same store the local commands use: the space is there for `engram space status` too.
    assert engram("space", "status", space_name, "--json").json()["uri"] == uri

    path = tmp_path / "m.jsonl"
    path.write_bytes(EXAMPLES.read_bytes()[:20000].rsplit(b"\n", 1)[0] + b"\n{oops\n")
    report = engram(*base, "--json", "import", space_name, path).json()
    count = report["created"]
    assert count > 20 and report["skipped"] == [{"line": count + 1, "reason": report["skipped"][0]["reason"]}]
    assert report["skipped"][0]["reason"].startswith("not valid JSON")
    assert engram(*base, "--json", "import", space_name, path).json()["unchanged"] == count
    # a line that is JSON but not an object is skipped alone, as `engram import` skips it, never its batch
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"text": "first of three"}\n[1]\n{"text": "third of three"}\n')
    mixed_report = engram(*base, "--json", "import", space_name, mixed)
    assert mixed_report.code == 0 and (mixed_report.json()["created"], mixed_report.json()["skipped"]) == (
        2,
        [{"line": 2, "reason": "each line must be a JSON object"}],
    )
    # and a run that wrote nothing because every line was refused exits 1, as the local import does
    refused_all = tmp_path / "refused.jsonl"
    refused_all.write_text("[1]\n{oops\n")
    assert engram(*base, "import", space_name, refused_all).code == 1
    # an ingest with a refused file exits 1 (the local ingest's rule)
    unreadable = tmp_path / "fake.pdf"
    unreadable.write_bytes(b"%PDF-1.4 not really")
    assert engram(*base, "ingest", space_name, unreadable).code == 1
    count += 2

    token = engram(*base, "apikey", "create", space_name, "--scope", "write").out.strip()
    assert token.startswith("engram_")
    keys = engram(*base, "--json", "apikey", "list", space_name).json()["keys"]
    assert [k["scopes"] for k in keys] == [["write"]]
    assert engram(*base, "apikey", "revoke", keys[0]["id"]).code == 0
    assert "reindex" not in engram(*base, "reindex", space_name).err
    listed = engram(*base, "--json", "space", "list").json()["spaces"]
    assert {s["uri"]: s["memories"] for s in listed}[uri] == count

    # An export tar moves through importMemories with its vectors ({"$bytes": ...}) intact.
    exported = tmp_path / "a.tar"
    assert engram("export", space_name, "--out", exported).code == 0
    engram(*base, "space", "create", space_name + "-copy")
    moved = engram(*base, "--json", "import", space_name + "-copy", exported).json()
    assert (moved["created"], moved["notIndexed"], moved["skipped"]) == (count, 0, [])
    copied = tmp_path / "b.tar"
    engram("export", space_name + "-copy", "--out", copied)
    with tarfile.open(exported) as a, tarfile.open(copied) as b:
        assert a.extractfile("memories.jsonl").read() == b.extractfile("memories.jsonl").read()

    # Like the local `engram space delete`: without --yes it asks, and no terminal means no.
    refused = engram(*base, "space", "delete", space_name)
    assert refused.code == 1 and "not deleted (pass --yes" in refused.err
    assert uri in {s["uri"] for s in engram(*base, "--json", "space", "list").json()["spaces"]}
    assert engram(*base, "space", "delete", space_name, "--yes").code == 0
    assert uri not in {s["uri"] for s in engram(*base, "--json", "space", "list").json()["spaces"]}

    wrong = engram(
        "admin",
        "--remote",
        server.url,
        "--key",
        server.ops_key_file,
        "--did",
        "did:plc:notadmin",
        "space",
        "list",
    )
    assert wrong.code == 1 and wrong.err.startswith("engram: Forbidden: did:plc:notadmin is not an admin DID")


async def test_list_spaces_pages_in_uri_order_with_counts_from_one_query(admin):
    client, settings, ops, _ = admin
    names = [f"paged-{i}" for i in range(5)]
    for name in names:
        body = orjson.dumps({"name": name})
        assert (
            await client.post(CREATE, data=body, headers=_signed(settings, ops, OPS_DID, CREATE, body))
        ).ok
    path = "/xrpc/garden.engram.admin.importMemories"
    batch = orjson.dumps(
        {"space": "paged-3", "memories": [{"text": "one"}, {"text": "two"}, {"text": "three"}]}
    )
    assert (await client.post(path, data=batch, headers=_signed(settings, ops, OPS_DID, path, batch))).ok

    seen, cursor, pages = [], None, 0
    while True:
        query = "?limit=2" + (f"&cursor={cursor}" if cursor else "")
        path = "/xrpc/garden.engram.admin.listSpaces" + query
        r = await client.get(path, headers=_signed(settings, ops, OPS_DID, path, method="GET"))
        assert r.status == 200, await r.text()
        page = await r.json()
        pages += 1
        assert len(page["spaces"]) <= 2
        seen.extend((s["name"], s["memories"], s["indexed"]) for s in page["spaces"])
        cursor = page.get("cursor")
        if cursor is None:
            break
    assert pages == 3
    assert seen == [(name, 3 if name == "paged-3" else 0, 3 if name == "paged-3" else 0) for name in names]
