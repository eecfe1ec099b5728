"""Registering a synced space: `engram space add` (local CLI) and garden.engram.admin.addSyncedSpace."""

from __future__ import annotations

import os
import stat
from dataclasses import replace

import orjson
from support.sync import has_text, memory_record, notify, rkey, until

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.admin_signature import sign_admin_request
from engram.auth.crypto_keys import PrivateKey
from engram.auth.identity import save_operator_key
from engram.cli.main import main

SPACE = "at://did:plc:authority0000000000000000/space/garden.engram.space/notes"
ACCOUNT = "did:plc:reader00000000000000000000"
OPS_DID = "did:plc:syncopsadmin0000000000000"
ADD = "/xrpc/garden.engram.admin.addSyncedSpace"


def test_cli_space_add_then_status(tmp_path, monkeypatch, capsys):
    for name in [k for k in os.environ if k.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ENGRAM_EMBEDDER", "none")
    password_file = tmp_path / "app-password"
    password_file.write_text("abcd-efgh-ijkl-mnop\n")
    assert main(["space", "add", SPACE, "--account", ACCOUNT, "--app-password-file", str(password_file)]) == 0
    assert f"syncing {SPACE}" in capsys.readouterr().out
    assert main(["space", "status", SPACE, "--json"]) == 0
    view = orjson.loads(capsys.readouterr().out)
    assert view["sync"] == {"access": "app_password", "repos": []}
    secret = next((tmp_path / "data" / "sync" / "secrets").iterdir())
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert "abcd-efgh-ijkl-mnop" not in capsys.readouterr().out
    assert (
        main(
            [
                "space",
                "add",
                "at://did:plc:x/app.bsky.feed.post/1",
                "--account",
                ACCOUNT,
                "--app-password-file",
                str(password_file),
            ]
        )
        != 0
    )


async def test_admin_add_synced_space_starts_syncing(aiohttp_client, network, sync_settings):
    ops = PrivateKey.generate("ES256")
    save_operator_key(sync_settings.data_dir, OPS_DID, ops)
    settings = replace(sync_settings, admin_dids=frozenset({OPS_DID}))
    engram = await aiohttp_client(await create_app(settings))
    engram.ctx = engram.app[context_key]
    network.engram_url, network.engram_did = str(engram.make_url("")).rstrip("/"), settings.service_did
    body = orjson.dumps(
        {"space": network.space, "account": network.reader.did, "appPassword": network.reader.password}
    )
    headers = sign_admin_request(
        ops, OPS_DID, "POST", settings.public_url + ADD, body, {"Content-Type": "application/json"}
    )
    r = await engram.post(ADD, data=body, headers=headers)
    assert r.status == 200, await r.text()
    assert await r.json() == {"space": network.space}
    await notify(
        engram,
        network,
        network.put(network.add_member(), "garden.engram.memory", rkey(), memory_record("via admin", 1)),
    )
    await until(lambda: has_text(engram, network, "via admin"), "synced after the admin call")
    body = orjson.dumps({"space": network.space, "account": "not-a-did", "appPassword": "x"})
    headers = sign_admin_request(
        ops, OPS_DID, "POST", settings.public_url + ADD, body, {"Content-Type": "application/json"}
    )
    r = await engram.post(ADD, data=body, headers=headers)
    assert r.status == 400 and (await r.json())["error"] == "InvalidRequest"
