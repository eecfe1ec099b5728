"""A client making the calls engram-garden's Python client makes (its `Agent` and `manage` modules; upstream
files and commits in docs/compat.md#engram-garden-client), knowing nothing about engram:

- as a member: sign in at its own PDS (`createSession`); `remember` is `com.atproto.space.createRecord` at
  that PDS with `"repo": <its DID>`, `forget` is `deleteRecord`, `reembed` is `listRecords` + `putRecord`;
  `recall` exchanges a delegation token from its PDS at the space host (`getSpaceCredential`, a fresh P-256
  holder key) and calls `garden.engram.searchMemories` with the credential, addressed to the service's DID;
- as the authority: `com.atproto.simplespace.putMember` / `removeMember` / `listMembers` at the space host
  with the service-auth JWT its PDS mints when proxying them (`atproto-proxy`).

Records are `garden.engram.memory` with the embedding the member computed with the space's model."""

from __future__ import annotations

from typing import Any

import aiohttp
import numpy as np

from engram.atrepo.blocks import b64encode
from engram.auth.crypto_keys import PrivateKey
from engram.auth.service_jwt import mint_service_jwt
from engram.auth.space_signature import sign_space_exchange, sign_space_request
from engram.search.vectors import encode_query_vector
from engram.store import ModelSpec

MEMORY = "garden.engram.memory"


class ClientError(Exception):
    pass


async def _json(http: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> Any:
    async with http.request(method, url, **kw) as r:
        body = await r.json(content_type=None) if r.content_length != 0 else {}
        if r.status != 200:
            raise ClientError(f"{method} {url}: {r.status} {body}")
        return body


def embedding(vector: np.ndarray, model: ModelSpec) -> dict[str, Any]:
    return {"model": model.model, "modelDigest": model.digest, "dims": model.dims, "encoding": "f16le",
            "vector": {"$bytes": b64encode(vector.astype("<f2").tobytes())}}  # fmt: skip


class MemberClient:
    def __init__(self, http, pds_url: str, did: str, password: str, space: str, host_url: str, host_did: str):
        self.http, self.pds, self.did, self.password = http, pds_url.rstrip("/"), did, password
        self.space, self.host, self.host_did = space, host_url.rstrip("/"), host_did
        self.session: dict[str, str] = {}
        self.holder = PrivateKey.generate("ES256")
        self.credential: str | None = None

    async def sign_in(self) -> None:
        out = await _json(self.http, "POST", f"{self.pds}/xrpc/com.atproto.server.createSession",
                          json={"identifier": self.did, "password": self.password})  # fmt: skip
        self.session = {"Authorization": f"Bearer {out['accessJwt']}"}

    async def _write(self, nsid: str, body: dict[str, Any]) -> dict[str, Any]:
        return await _json(self.http, "POST", f"{self.pds}/xrpc/com.atproto.space.{nsid}",
                           json={"space": self.space, "repo": self.did, **body}, headers=self.session)  # fmt: skip

    async def remember(self, text: str, vector: np.ndarray, model: ModelSpec, tags: list[str] = ()) -> str:
        record = {"$type": MEMORY, "text": text, "createdAt": "2026-12-01T10:00:00.000Z"}
        if tags:
            record["tags"] = list(tags)
        record["embedding"] = embedding(vector, model)
        out = await self._write("createRecord", {"collection": MEMORY, "record": record})
        return out["uri"]

    async def forget(self, uri: str) -> None:
        await self._write("deleteRecord", {"collection": MEMORY, "rkey": uri.rsplit("/", 1)[1]})

    async def reembed(self, vector_of, model: ModelSpec) -> int:
        """Re-embed every memory of the member's own repo in the space (listRecords + putRecord)."""
        out = await _json(self.http, "GET", f"{self.pds}/xrpc/com.atproto.space.listRecords",
                          params={"space": self.space, "repo": self.did, "collection": MEMORY, "limit": "100"},
                          headers=self.session)  # fmt: skip
        for record in out["records"]:
            value = {**record["value"], "embedding": embedding(vector_of(record["value"]["text"]), model)}
            rkey = record["uri"].rsplit("/", 1)[1]
            await self._write("putRecord", {"collection": MEMORY, "rkey": rkey, "record": value})
        return len(out["records"])

    async def get_credential(self) -> str:
        token = (await _json(self.http, "GET", f"{self.pds}/xrpc/com.atproto.space.getDelegationToken",
                             params={"space": self.space}, headers=self.session))["token"]  # fmt: skip
        out = await _json(self.http, "POST", f"{self.host}/xrpc/com.atproto.space.getSpaceCredential",
                          json={"space": self.space}, headers=sign_space_exchange(self.holder, f"Bearer {token}"))  # fmt: skip
        self.credential = out["credential"]
        return self.credential

    async def recall(
        self, vector: np.ndarray, model: ModelSpec, limit: int = 10, q: str = "recall"
    ) -> list[dict[str, Any]]:
        if self.credential is None:
            await self.get_credential()
        params = {"space": self.space, "q": q, "vector": encode_query_vector(vector), "model": model.model,
                  "modelDigest": model.digest, "limit": str(limit)}  # fmt: skip
        out = await _json(self.http, "GET", f"{self.host}/xrpc/garden.engram.searchMemories", params=params,
                          headers=sign_space_request(self.holder, self.credential, self.host_did))  # fmt: skip
        return out["memories"]


class AuthorityClient:
    """The space's authority managing members at the space host, through its PDS's proxy."""

    def __init__(self, http, host_url: str, host_did: str, authority: str, key: PrivateKey, space: str):
        self.http, self.host, self.host_did = http, host_url.rstrip("/"), host_did
        self.authority, self.key, self.space = authority, key, space

    def _auth(self, nsid: str) -> dict[str, str]:
        token = mint_service_jwt(
            self.key, iss=self.authority, aud=f"{self.host_did}#atproto_space_host", lxm=nsid
        )
        return {"Authorization": f"Bearer {token}"}

    async def put_member(self, did: str, *, read: bool = True, write: bool = True) -> None:
        nsid = "com.atproto.simplespace.putMember"
        await _json(self.http, "POST", f"{self.host}/xrpc/{nsid}", headers=self._auth(nsid),
                    json={"space": self.space, "did": did, "read": read, "write": write})  # fmt: skip

    async def remove_member(self, did: str) -> None:
        nsid = "com.atproto.simplespace.removeMember"
        await _json(self.http, "POST", f"{self.host}/xrpc/{nsid}", headers=self._auth(nsid),
                    json={"space": self.space, "did": did})  # fmt: skip

    async def list_members(self) -> list[dict[str, Any]]:
        nsid = "com.atproto.simplespace.listMembers"
        out = await _json(self.http, "GET", f"{self.host}/xrpc/{nsid}", headers=self._auth(nsid),
                          params={"space": self.space})  # fmt: skip
        return out["members"]
