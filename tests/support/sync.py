"""Helpers for the sync tests: records as members write them, waiting for a condition, signed searches."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import numpy as np

from engram.atrepo.blocks import b64encode
from engram.auth.crypto_keys import PrivateKey
from engram.auth.space_signature import sign_space_request
from engram.search.vectors import encode_query_vector
from engram.store import ModelSpec
from engram.store.tid import new_tid
from support.fakes.spaces_network import SpacesNetwork

MODEL = ModelSpec("test-model", "sha256:test", 16)
OTHER_MODEL = ModelSpec("other-model", "sha256:other", 16)


@asynccontextmanager
async def running_network() -> AsyncIterator[SpacesNetwork]:
    """A started fake spaces network with one reader member and the space's config record."""
    net = SpacesNetwork()
    net.reader = net.add_member(reader=True)
    await net.start()
    net.put(net.authority, "garden.engram.config", "self", config_record())
    try:
        yield net
    finally:
        await net.close()


def config_record(model: ModelSpec = MODEL) -> dict[str, Any]:
    return {
        "$type": "garden.engram.config",
        "model": model.model,
        "modelDigest": model.digest,
        "dims": model.dims,
        "createdAt": "2026-11-01T00:00:00.000Z",
    }


def unit_vector(seed: int, dims: int = 16) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return v / np.linalg.norm(v)


def memory_record(text: str, seed: int, model: ModelSpec = MODEL, **extra: Any) -> dict[str, Any]:
    vector = unit_vector(seed, model.dims).astype("<f2").tobytes()
    return {
        "$type": "garden.engram.memory",
        "text": text,
        "createdAt": "2026-11-01T10:00:00.000Z",
        "embedding": {
            "model": model.model,
            "modelDigest": model.digest,
            "dims": model.dims,
            "encoding": "f16le",
            "vector": {"$bytes": b64encode(vector)},
        },
        **extra,
    }


def rkey() -> str:
    return new_tid()


async def until(condition: Callable[[], Awaitable[Any] | Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``condition`` until it holds and answer its value; a generous bound only turns a hang into a
    clear failure."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = condition()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.02)


async def search(
    client, network, settings, seed: int, model: ModelSpec = MODEL, **params: Any
) -> tuple[int, Any]:
    holder = PrivateKey.generate("ES256")
    headers = sign_space_request(holder, network.reader_credential(holder), settings.service_did)
    query = {
        "space": network.space,
        "vector": encode_query_vector(unit_vector(seed, model.dims)),
        "model": model.model,
        "modelDigest": model.digest,
        "limit": 10,
        **params,
    }
    r = await client.get("/xrpc/garden.engram.searchMemories", params=query, headers=headers)
    return r.status, await r.json()


async def status(client, network, settings) -> tuple[int, Any]:
    holder = PrivateKey.generate("ES256")
    headers = sign_space_request(holder, network.reader_credential(holder), settings.service_did)
    r = await client.get(
        "/xrpc/garden.engram.getSpaceStatus", params={"space": network.space}, headers=headers
    )
    return r.status, await r.json()


async def texts(client, network, settings, seed: int = 0) -> set[str]:
    code, body = await search(client, network, settings, seed)
    assert code == 200, body
    return {m["text"] for m in body["memories"]}


async def add_space(engram, network) -> None:
    """Register the network's space with engram's syncer and wait for the first full pass."""
    listed = network.host.calls["listRepos"]
    await engram.ctx.syncer.add_space(network.space, network.reader.did, network.reader.password)
    await until(
        lambda: network.host.calls["listRepos"] > listed and engram.ctx.syncer.idle(network.space),
        "first sync",
    )


async def notify(engram, network, notification: dict[str, Any]) -> None:
    code, body = await network.post_to_engram(engram.session, "com.atproto.space.notifyWrite", notification)
    assert code == 200, body


async def has_text(engram, network, text: str, seed: int = 0) -> bool:
    code, body = await search(engram, network, engram.ctx.settings, seed, limit=50)
    return code == 200 and text in {m["text"] for m in body["memories"]}
