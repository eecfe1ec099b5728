"""A fake PLC directory + did:web host on 127.0.0.1 (a real aiohttp server on a real port).

- did:plc documents are served at ``/{did}`` (the PLC directory layout; 404 for unknown DIDs);
- did:web documents at ``/.well-known/did.json``, chosen by the Host header, so the server answers for
  ``did:web:127.0.0.1%3A{port}`` and ``did:web:localhost%3A{port}`` (see ``web_did``).
Every request is counted per DID (``requests[did]``) so tests can assert how often a resolver fetched.
"""

from __future__ import annotations

import base64
import secrets
from collections import Counter
from typing import Any
from urllib.parse import quote

from aiohttp import web

from engram.auth.crypto_keys import PublicKey
from engram.auth.did_document import DidDocument, Service


def random_plc_did() -> str:
    return "did:plc:" + base64.b32encode(secrets.token_bytes(15)).decode("ascii").lower()


class FakeDidServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host  # another loopback address (127.0.0.2) keeps it apart from a canary on 127.0.0.1
        self.docs: dict[str, dict[str, Any]] = {}
        self.requests: Counter[str] = Counter()
        self.status_override: dict[str, int] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> FakeDidServer:
        app = web.Application()
        app.router.add_get("/.well-known/did.json", self._did_web)
        app.router.add_get("/{did}", self._plc)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        """Use as the resolver's PLC directory URL."""
        return f"http://{self.host}:{self.port}"

    def web_did(self, host: str = "127.0.0.1") -> str:
        return "did:web:" + quote(f"{host}:{self.port}", safe="")

    def register(
        self, did: str, keys: PublicKey | dict[str, PublicKey], services: dict[str, Service] | None = None
    ) -> dict[str, Any]:
        """Serve a Multikey document for ``did``; a bare key becomes its ``#atproto`` method."""
        if isinstance(keys, PublicKey):
            keys = {"#atproto": keys}
        doc = DidDocument.build(did, keys, services).to_json()
        self.docs[did] = doc
        return doc

    def register_raw(self, did: str, document: dict[str, Any]) -> None:
        self.docs[did] = document

    def rotate(self, did: str, new_key: PublicKey, fragment: str = "#atproto") -> None:
        doc = self.docs[did]
        for vm in doc["verificationMethod"]:
            if vm["id"].endswith(fragment):
                vm["publicKeyMultibase"] = new_key.multibase

    def remove(self, did: str) -> None:
        self.docs.pop(did, None)

    def _answer(self, did: str) -> web.Response:
        self.requests[did] += 1
        if did in self.status_override:
            return web.json_response({"message": "overridden"}, status=self.status_override[did])
        doc = self.docs.get(did)
        if doc is None:
            return web.json_response({"message": f"DID not registered: {did}"}, status=404)
        return web.json_response(doc)

    async def _plc(self, request: web.Request) -> web.Response:
        return self._answer(request.match_info["did"])

    async def _did_web(self, request: web.Request) -> web.Response:
        return self._answer("did:web:" + quote(request.host, safe=""))
