"""Single use means single use everywhere (docs/security.md#single-use-tokens): OAuth codes and refresh
tokens under parallel use, confidential clients on every token request, codes bound to the mount that
issued them, delegation tokens across two serving processes and a restart."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time
from pathlib import Path

import aiohttp
import pytest
from support.engram_process import start_engram, stop
from support.fakes.did_server import FakeDidServer
from support.member_world import MODEL, exchange_headers, new_member
from support.outbound_world import PLC_HOST

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.compat.memorybank.keyauth import SCOPES as BANK_SCOPES
from engram.config import read_env
from engram.lifecycle import open_context
from engram.oauth import OAuthServer
from engram.service.apikeys import create_api_key

REDIRECT = "https://chat.example/aip/callback"
PARALLEL = 8


def _basic(client_id: str, secret: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{client_id}:{secret}".encode()).decode()}


async def _post_fresh(url: str, form: dict, headers: dict | None = None) -> tuple[int, dict]:
    """One request on a connection of its own (with several serving processes the kernel spreads them)."""
    async with aiohttp.ClientSession() as session, session.post(url, data=form, headers=headers) as r:
        return r.status, await r.json()


async def _bank_query(base: str, token: str) -> int:
    async with aiohttp.ClientSession() as session, session.post(
        f"{base}/memorybank/query", json={"queries": [{"query": "x", "user_id": "u"}]},
        headers={"Authorization": f"Bearer {token}"},
    ) as r:  # fmt: skip
        return r.status


async def _code(store, key, issuer: str = "memorybank") -> str:
    """An authorization code as the consent page issues it (no PKCE: the key-backed client authenticates)."""
    server = OAuthServer(store, BANK_SCOPES, issuer=issuer)
    return await server.issue_code(client_id=str(key.id), user_key=key, scopes=frozenset(BANK_SCOPES),
                                   redirect_uri=REDIRECT, code_challenge=None)  # fmt: skip


async def _race_code_and_refresh(base: str, store, key, token: str) -> None:
    """The checks both the one-process and the two-process tests make."""
    auth = _basic(str(key.id), token)
    code = await _code(store, key)
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    answers = await asyncio.gather(
        *(_post_fresh(f"{base}/memorybank/exchange", form, auth) for _ in range(PARALLEL))
    )
    winners = [body for status, body in answers if status == 200]
    assert len(winners) == 1, answers
    assert all(body["error"] == "invalid_grant" for status, body in answers if status != 200), answers
    # The losers revoked the family: the winner's tokens are dead too (someone else held the code).
    assert await _bank_query(base, winners[0]["access_token"]) == 401

    for _round in range(3):
        code = await _code(store, key)
        status, tokens = await _post_fresh(f"{base}/memorybank/exchange", {**form, "code": code}, auth)
        assert status == 200, tokens
        refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
        answers = await asyncio.gather(
            *(_post_fresh(f"{base}/memorybank/exchange", refresh, auth) for _ in range(PARALLEL))
        )
        winners = [body for status, body in answers if status == 200]
        assert len(winners) == 1, answers
        assert all(body["error"] == "invalid_grant" for status, body in answers if status != 200), answers
        # every lineage is revoked: the first pair and the winner's new pair alike
        for access in (tokens["access_token"], winners[0]["access_token"]):
            assert await _bank_query(base, access) == 401
        again = {"grant_type": "refresh_token", "refresh_token": winners[0]["refresh_token"]}
        status, body = await _post_fresh(f"{base}/memorybank/exchange", again, auth)
        assert status == 400 and body["error"] == "invalid_grant"


@pytest.fixture
async def bank(aiohttp_client, settings):
    client = await aiohttp_client(await create_app(settings))
    ctx = client.app[context_key]
    space = await ctx.services.spaces.create_hosted("memorybank")
    key, token = await create_api_key(ctx.store, space.uri, ["read", "write"], "memory bank")
    return client, ctx, key, token


async def test_parallel_code_exchanges_and_refreshes_have_exactly_one_winner(bank):
    client, ctx, key, token = bank
    await _race_code_and_refresh(str(client.make_url("")).rstrip("/"), ctx.store, key, token)


async def test_a_confidential_client_authenticates_on_every_token_request(bank):
    client, ctx, key, token = bank
    base = str(client.make_url("")).rstrip("/")
    code = await _code(ctx.store, key)
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": str(key.id),
    }
    status, body = await _post_fresh(f"{base}/memorybank/exchange", form)
    assert status == 401 and body["error"] == "invalid_client"
    status, tokens = await _post_fresh(f"{base}/memorybank/exchange", form, _basic(str(key.id), token))
    assert status == 200, tokens
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    status, body = await _post_fresh(f"{base}/memorybank/exchange", refresh)  # no secret this time
    assert status == 401 and body["error"] == "invalid_client"
    status, body = await _post_fresh(
        f"{base}/memorybank/exchange", refresh, _basic(str(key.id), "engram_wrong")
    )
    assert status == 401 and body["error"] == "invalid_client"
    # a registered confidential client with PKCE must send its secret as well
    server = OAuthServer(ctx.store, BANK_SCOPES, issuer="memorybank")
    registered, secret = await server.register_client("a GPT", [REDIRECT], confidential=True)
    verifier = "v" * 64
    from engram.oauth.server import s256

    code = await server.issue_code(client_id=registered.client_id, user_key=key, scopes=frozenset(BANK_SCOPES),
                                   redirect_uri=REDIRECT, code_challenge=s256(verifier))  # fmt: skip
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
            "client_id": registered.client_id, "code_verifier": verifier}  # fmt: skip
    status, body = await _post_fresh(f"{base}/memorybank/exchange", form)
    assert status == 401 and body["error"] == "invalid_client"
    status, body = await _post_fresh(
        f"{base}/memorybank/exchange", form, _basic(registered.client_id, secret)
    )
    assert status == 200, body


async def test_a_code_exchanges_only_at_the_mount_that_issued_it(bank):
    client, ctx, key, token = bank
    base = str(client.make_url("")).rstrip("/")
    auth = _basic(str(key.id), token)
    code = await _code(ctx.store, key, issuer="mcp")  # what /oauth/mcp/login would have issued
    form = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT}
    status, body = await _post_fresh(f"{base}/memorybank/exchange", form, auth)
    assert status == 400 and body["error"] == "invalid_grant"
    status, tokens = await _post_fresh(f"{base}/oauth/mcp/exchange", form, auth)
    assert status == 200, tokens  # the code was good, at its own mount
    # and the MCP mount's refresh token is unknown at Memory Bank's
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"]}
    status, body = await _post_fresh(f"{base}/memorybank/exchange", refresh, auth)
    assert status == 400 and body["error"] == "invalid_grant"
    assert await _bank_query(base, tokens["access_token"]) == 401


# -- two serving processes over one data directory, and a restart ----------------------------------------


def _env(data_dir: Path, plc_url: str):
    base = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}

    def env(port: int) -> dict[str, str]:
        return base | {
            "ENGRAM_DATA_DIR": str(data_dir), "ENGRAM_EMBEDDER": "hashing", "ENGRAM_PORT": str(port),
            "ENGRAM_PUBLIC_URL": "https://engram.test", "ENGRAM_SERVICE_DID": "did:web:engram.test",
            "ENGRAM_PROCESSES": "2",
            "ENGRAM_LOG_LEVEL": "warning", "ENGRAM_PLC_URL": plc_url, "ENGRAM_OUTBOUND_ALLOW": PLC_HOST,
        }  # fmt: skip

    return env


async def _listening_twice(port: int) -> None:
    wanted = f"0100007F:{port:04X}"
    deadline = time.monotonic() + 60
    while True:
        lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
        if sum(1 for line in lines if line.split()[1] == wanted and line.split()[3] == "0A") == 2:
            return
        assert time.monotonic() < deadline, "both serving processes listen"
        await asyncio.sleep(0.05)


@pytest.fixture
async def plc():
    server = await FakeDidServer(PLC_HOST).start()
    yield server
    await server.close()


async def test_a_delegation_token_yields_one_credential_across_processes_and_restarts(tmp_path, plc):
    env = _env(tmp_path / "data", plc.url)
    command = [sys.executable, "-m", "engram", "serve"]
    async with open_context(read_env(env(0))) as ctx:
        space = await ctx.services.spaces.create_hosted("team-notes", model=MODEL)
        member = new_member(plc)
        await ctx.services.members.grant(space.uri, member.did)
    token = member.token(space.uri, exp=int(time.time()) + 1800)  # outlives the restart below

    async def exchange_all(port: int, times: int) -> list[tuple[int, dict]]:
        url = f"http://127.0.0.1:{port}/xrpc/com.atproto.space.getSpaceCredential"

        async def one():
            # each replayer signs with a key of its own, as a thief would
            headers = exchange_headers(PrivateKey.generate("ES256"), token)
            async with aiohttp.ClientSession() as session, session.post(
                url, json={"space": space.uri}, headers=headers
            ) as r:  # fmt: skip
                return r.status, await r.json()

        return await asyncio.gather(*(one() for _ in range(times)))

    proc, port = start_engram(command, env, tmp_path / "serve.log")
    try:
        await _listening_twice(port)
        answers = await exchange_all(port, 10)
    finally:
        stop(proc)
    assert [status for status, _ in answers].count(200) == 1, answers
    assert all(b["error"] == "InvalidDelegationToken" and "JwtReplayed" in b["message"]
               for s, b in answers if s != 200), answers  # fmt: skip

    proc, port = start_engram(command, env, tmp_path / "serve-again.log")
    try:
        after_restart = await exchange_all(port, 2)
    finally:
        stop(proc)
    assert [status for status, _ in after_restart] == [401, 401], after_restart


async def test_oauth_races_have_one_winner_across_two_processes(tmp_path, plc):
    env = _env(tmp_path / "data", plc.url)
    async with open_context(read_env(env(0))) as ctx:
        space = await ctx.services.spaces.create_hosted("memorybank")
        key, token = await create_api_key(ctx.store, space.uri, ["read", "write"], "memory bank")
        proc, port = start_engram([sys.executable, "-m", "engram", "serve"], env, tmp_path / "serve.log")
        try:
            await _listening_twice(port)
            await _race_code_and_refresh(f"http://127.0.0.1:{port}", ctx.store, key, token)
        finally:
            stop(proc)
