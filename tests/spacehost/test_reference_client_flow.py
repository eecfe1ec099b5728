"""The issue's "done when": a member DID engram has never seen gets a credential through the standard
exchange and searches a hosted space, using a client that knows only the space URI (reference_client.py)."""

from __future__ import annotations

import aiohttp
import numpy as np
import pytest
from support.fakes.did_server import random_plc_did
from support.member_world import MODEL, new_member
from support.reference_client import ReferenceSpaceClient, SpaceClientError

from engram.app import create_app
from engram.app_keys import context_key
from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import Service
from engram.auth.identity import save_operator_key
from engram.search.vectors import encode_query_vector
from engram.store import Embedding, MemoryWrite


async def test_a_new_member_gets_a_credential_reads_the_config_and_searches(
    aiohttp_client, host_settings, plc, member_pds
):
    # The space's authority is an operator did:plc whose key engram holds; its PLC document names engram as
    # its space host and PDS. The member has its own did:plc and PDS, and engram has never resolved it.
    authority, authority_key = random_plc_did(), PrivateKey.generate("ES256K")
    save_operator_key(host_settings.data_dir, authority, authority_key)
    client = await aiohttp_client(await create_app(host_settings))
    engram_url = str(client.make_url("")).rstrip("/")
    services = {
        "#atproto_space_host": Service("AtprotoSpaceHost", engram_url),
        "#atproto_pds": Service("AtprotoPersonalDataServer", engram_url),
    }
    plc.register(authority, authority_key.public_key, services)
    ctx = client.app[context_key]
    space = (await ctx.services.spaces.create_hosted("field-notes", authority=authority, model=MODEL)).uri
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((3, MODEL.dims)).astype(np.float32)
    texts = ["the kiln fires at dawn", "glaze batches need a day to settle", "clay is wedged on mondays"]
    await ctx.services.memories.write(space, [
        MemoryWrite(author=authority, text=t, embedding=Embedding(MODEL.model, MODEL.digest, MODEL.dims, v))
        for t, v in zip(texts, vectors, strict=True)
    ])  # fmt: skip
    member = new_member(plc, member_pds)
    await ctx.services.members.grant(space, member.did)

    async with aiohttp.ClientSession() as http:
        app = ReferenceSpaceClient(http, plc.url, member.did, {"X-Test-Member": member.did})
        await app.get_credential(space)
        config = await app.read_config(space)
        assert (config["model"], config["modelDigest"], config["dims"]) == (
            MODEL.model,
            MODEL.digest,
            MODEL.dims,
        )
        query = {"vector": encode_query_vector(vectors[1]), "model": config["model"],
                 "modelDigest": config["modelDigest"], "limit": "2"}  # fmt: skip
        found = await app.search(engram_url, space, query)
        assert found["memories"][0]["text"] == "glaze batches need a day to settle"
        assert found["memories"][0]["uri"].startswith(f"{space}/{authority}/garden.engram.memory/")

        # Revoked: the next exchange is refused, while the credential already issued lives out its TTL.
        await ctx.services.members.revoke(space, member.did)
        with pytest.raises(SpaceClientError, match="UserNotAuthorized"):
            await app.get_credential(space)
