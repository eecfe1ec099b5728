"""A space client written from the protocol (spaces credential exchange and repo reads), as an app outside
engram would be: it knows a space URI, its user's DID and a session at its PDS, and nothing about engram.

1. the authority is the space URI's DID; its DID document (PLC directory) names the space host
   (#atproto_space_host, else #atproto_pds) and the PDS holding its repo (#atproto_pds);
2. the user's PDS (from the user's own DID document) issues a delegation token for the space;
3. the space host exchanges it (Bearer + an atproto-space signature with keyid = a fresh P-256 did:key)
   for a credential bound to that key;
4. the config record (garden.engram.config/self in the authority's repo) is read with the credential,
   addressed to the repo owner;
5. the search service is called with the credential, addressed to that service's DID.

Only the HTTP message signature helpers are shared with engram (they are pinned to the reference vectors in
tests/auth/test_auth_vectors.py); resolution, the exchange and every request are made here.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from engram.auth.crypto_keys import PrivateKey
from engram.auth.space_signature import sign_space_exchange, sign_space_request


class SpaceClientError(Exception):
    pass


class ReferenceSpaceClient:
    def __init__(
        self, http: aiohttp.ClientSession, plc_url: str, user_did: str, session_header: dict[str, str]
    ):
        self.http, self.plc_url, self.user_did, self.session_header = http, plc_url, user_did, session_header
        self.holder = PrivateKey.generate("ES256")  # fresh per client
        self.credential: str | None = None

    async def _json(self, method: str, url: str, **kw) -> Any:
        async with self.http.request(method, url, **kw) as r:
            body = await r.json(content_type=None)
            if r.status != 200:
                raise SpaceClientError(f"{method} {url}: {r.status} {body}")
            return body

    async def service_endpoint(self, did: str, *fragments: str) -> str:
        doc = await self._json("GET", f"{self.plc_url}/{did}")
        for fragment in fragments:
            for service in doc.get("service", []):
                if service["id"] in (fragment, f"{did}{fragment}"):
                    return service["serviceEndpoint"].rstrip("/")
        raise SpaceClientError(f"{did} publishes none of {fragments}")

    async def get_credential(self, space: str) -> str:
        authority = space.split("/")[2]
        host = await self.service_endpoint(authority, "#atproto_space_host", "#atproto_pds")
        pds = await self.service_endpoint(self.user_did, "#atproto_pds")
        token = (
            await self._json(
                "GET",
                f"{pds}/xrpc/com.atproto.space.getDelegationToken",
                params={"space": space},
                headers=self.session_header,
            )
        )["token"]
        headers = sign_space_exchange(self.holder, f"Bearer {token}")
        out = await self._json(
            "POST",
            f"{host}/xrpc/com.atproto.space.getSpaceCredential",
            json={"space": space},
            headers=headers,
        )
        self.credential = out["credential"]
        return self.credential

    def _signed(self, audience: str) -> dict[str, str]:
        if self.credential is None:
            raise SpaceClientError("no credential yet")
        return sign_space_request(self.holder, self.credential, audience)

    async def read_config(self, space: str) -> dict:
        authority = space.split("/")[2]
        pds = await self.service_endpoint(authority, "#atproto_pds")
        params = {"space": space, "repo": authority, "collection": "garden.engram.config", "rkey": "self"}
        out = await self._json(
            "GET", f"{pds}/xrpc/com.atproto.space.getRecord", params=params, headers=self._signed(authority)
        )
        return out["value"]

    async def search(self, service_url: str, space: str, params: dict[str, str]) -> dict:
        described = await self._json("GET", f"{service_url}/xrpc/garden.engram.describeService")
        return await self._json(
            "GET",
            f"{service_url}/xrpc/garden.engram.searchMemories",
            params={"space": space, **params},
            headers=self._signed(described["did"]),
        )
