"""Where to reach a DID's space host or PDS, and its #atproto key, from its DID document."""

from __future__ import annotations

from engram.auth.crypto_keys import PublicKey
from engram.auth.did_resolver import DidResolutionError, DocumentSource
from engram.sync.errors import UpstreamError
from engram.sync.http import endpoint_base


async def _document(resolver: DocumentSource, did: str, refresh: bool = False):
    try:
        return await resolver.resolve(did, force_refresh=refresh)
    except DidResolutionError as e:
        raise UpstreamError(f"cannot resolve {did}: {e}") from None


async def space_host(resolver: DocumentSource, authority: str) -> str:
    """The authority's ``#atproto_space_host`` service, else its PDS (docs/sync.md#read-access)."""
    doc = await _document(resolver, authority)
    service = doc.service("#atproto_space_host") or doc.service("#atproto_pds")
    if service is None:
        raise UpstreamError(f"{authority} publishes neither a space host nor a PDS")
    return endpoint_base(service.endpoint)  # the client enforces the address rule


async def pds(resolver: DocumentSource, did: str, *, refresh: bool = False) -> str:
    doc = await _document(resolver, did, refresh)
    service = doc.service("#atproto_pds")
    if service is None:
        raise UpstreamError(f"{did} publishes no PDS")
    return endpoint_base(service.endpoint)  # the client enforces the address rule


async def atproto_key(resolver: DocumentSource, did: str, *, refresh: bool = False) -> PublicKey:
    doc = await _document(resolver, did, refresh)
    key = doc.key("#atproto")
    if key is None:
        raise UpstreamError(f"{did} publishes no usable #atproto key")
    return key
