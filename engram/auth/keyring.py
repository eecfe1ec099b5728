"""DIDs whose private keys engram holds (its own service DID, operator DIDs for hosted spaces).

The resolver answers these from here with a locally built document and no network, so hosted spaces work
offline; the same private keys mint credentials (``engram credential mint``)."""

from __future__ import annotations

from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_document import DidDocument, Service


class LocalKeyring:
    def __init__(self) -> None:
        self._docs: dict[str, DidDocument] = {}
        self._keys: dict[str, PrivateKey] = {}

    def add(self, did: str, key: PrivateKey, services: dict[str, Service] | None = None) -> DidDocument:
        """Hold ``key`` as ``did``'s ``#atproto`` key. Only ``#atproto``: the document must match what engram
        publishes in did.json, or credentials valid here would fail everywhere else."""
        if not did.startswith("did:"):
            raise ValueError(f"not a DID: {did!r}")
        doc = DidDocument.build(did, {"#atproto": key.public_key}, services)
        self._docs[did] = doc
        self._keys[did] = key
        return doc

    def document(self, did: str) -> DidDocument | None:
        return self._docs.get(did)

    def private_key(self, did: str) -> PrivateKey | None:
        return self._keys.get(did)

    def __contains__(self, did: object) -> bool:
        return did in self._docs

    def dids(self) -> list[str]:
        return list(self._docs)
