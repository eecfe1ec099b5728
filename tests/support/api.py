"""Helpers for the API tests: a client that signs like a real reader, seeding, vectors.

(Not in conftest.py: test modules import these by name, and `conftest` is ambiguous across folders.)"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engram.auth.credential import mint_space_credential
from engram.auth.crypto_keys import PrivateKey
from engram.auth.space_signature import sign_space_request
from engram.search.vectors import encode_query_vector
from engram.store import Embedding, MemoryWrite, ModelSpec

MODEL = ModelSpec("test-model", "sha256:test", 16)


@dataclass
class Reader:
    """Mints a credential with the authority key engram holds and signs every request for engram's DID."""

    client: object
    ctx: object
    space: str
    holder: PrivateKey

    def headers(self, space: str | None = None, audience: str | None = None) -> dict[str, str]:
        space = space or self.space
        authority = space.split("/")[2]
        key = self.ctx.keyring.private_key(authority)
        token = mint_space_credential(
            key, issuer=authority, space=space, holder_did_key=self.holder.public_key.did_key
        )
        return sign_space_request(self.holder, token, audience or self.ctx.settings.service_did)

    async def get(self, nsid: str, params=None, *, space: str | None = None, **kw):
        params = dict(params or {})
        params.setdefault("space", space or self.space)
        return await self.client.get(
            f"/xrpc/{nsid}", params=params, headers=self.headers(params["space"]), **kw
        )

    async def post(self, nsid: str, body: dict, *, space: str | None = None):
        return await self.client.post(
            f"/xrpc/{nsid}", json=body, headers=self.headers(space or body.get("space"))
        )

    async def search(self, **params):
        return await self.get("garden.engram.searchMemories", params)


def unit(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    x = rng.standard_normal((n, dims)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def vector_params(vector: np.ndarray, spec: ModelSpec = MODEL) -> dict[str, str]:
    return {"vector": encode_query_vector(vector), "model": spec.model, "modelDigest": spec.digest}


async def seed(
    ctx, space: str, vectors: np.ndarray, *, spec: ModelSpec = MODEL, authors=None, tags=None, created=None
) -> list:
    items = []
    for i, v in enumerate(vectors):
        items.append(
            MemoryWrite(
                author=(authors[i] if authors else ctx.settings.service_did),
                text=f"memory number {i}",
                tags=tuple(tags[i]) if tags else (),
                created_at=created[i] if created else f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                embedding=Embedding(spec.model, spec.digest, spec.dims, v.astype(np.float16)),
            )
        )
    return await ctx.services.memories.write(space, items)


def settings_with(settings, **changes):
    return replace(settings, **changes)
