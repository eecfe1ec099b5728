"""An in-memory DID document source with the resolver's interface, counting forced refreshes."""

from __future__ import annotations

from collections import Counter

from engram.auth.crypto_keys import PublicKey
from engram.auth.did_document import DidDocument
from engram.auth.did_resolver import DidNotFoundError


class StaticResolver:
    def __init__(self, docs: dict[str, DidDocument] | None = None) -> None:
        self.docs = dict(docs or {})
        self.calls: Counter[tuple[str, bool]] = Counter()

    def add_key(self, did: str, key: PublicKey, fragments: tuple[str, ...] = ("#atproto",)) -> DidDocument:
        doc = DidDocument.build(did, {f: key for f in fragments})
        self.docs[did] = doc
        return doc

    async def resolve(self, did: str, force_refresh: bool = False) -> DidDocument:
        self.calls[(did, force_refresh)] += 1
        doc = self.docs.get(did)
        if doc is None:
            raise DidNotFoundError(f"{did} not found")
        return doc
