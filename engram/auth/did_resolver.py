"""DID resolution (did:plc via a PLC directory, did:web via /.well-known/did.json) with a TTL cache.

Written here instead of using ``atproto_identity``: its cache raises KeyError on a 404 (no negative
caching), it cannot decode a did:web port (``%3A``), it has no per-DID limit on forced refreshes (so every
forged token would cost a directory fetch) and it uses httpx rather than the app's aiohttp session.

- Found documents are cached for ``ttl``; not-found for ``not_found_ttl``; transient failures (timeouts,
  5xx, malformed documents) for ``error_ttl``, so a dead directory is not hammered either.
- ``force_refresh=True`` bypasses the cache at most once per ``refresh_interval`` per DID; otherwise it
  returns the cached answer. Concurrent resolutions of one DID share a single fetch.
- DIDs held in the ``LocalKeyring`` are answered locally, without network.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Protocol
from urllib.parse import unquote

import aiohttp
import orjson

from engram.auth.did_document import DidDocument, DidDocumentError
from engram.auth.keyring import LocalKeyring
from engram.auth.ttl_cache import TtlCache
from engram.outbound import OutboundPolicy, describe, parse_host_address, valid_host_name

MAX_DOCUMENT_BYTES = 64 * 1024
_PLC_RE = re.compile(r"did:plc:[a-z2-7]{24}")
_WEB_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::[0-9]{1,5})?")
_DEV_HOSTS = frozenset({"localhost", "127.0.0.1"})


class DidResolutionError(Exception):
    """The DID could not be resolved (unsupported, unreachable, malformed document)."""


class DidNotFoundError(DidResolutionError):
    """The directory or host says the DID does not exist (404/410)."""


class DidResolver:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        plc_url: str = "https://plc.directory",
        dev: bool = False,
        policy: OutboundPolicy | None = None,
        keyring: LocalKeyring | None = None,
        ttl: float = 3600.0,
        not_found_ttl: float = 60.0,
        error_ttl: float = 5.0,
        refresh_interval: float = 30.0,
        timeout: float = 3.0,
        max_entries: int = 10_000,
        now: Callable[[], float] = time.monotonic,
    ):
        self._session = session
        self._plc_url = plc_url.rstrip("/")
        self._dev = dev
        # The session is the guarded one (engram/outbound.py); the policy here refuses IP-literal hosts early.
        self._policy = policy or OutboundPolicy(dev=dev)
        self._keyring = keyring or LocalKeyring()
        self._ttl, self._not_found_ttl, self._error_ttl = ttl, not_found_ttl, error_ttl
        self._refresh_interval = refresh_interval
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._now = now
        self._cache: TtlCache[DidDocument | DidResolutionError] = TtlCache(max_entries, now)
        self._last_forced: TtlCache[bool] = TtlCache(max_entries, now)
        self._inflight: dict[str, asyncio.Future[DidDocument]] = {}

    @property
    def keyring(self) -> LocalKeyring:
        return self._keyring

    async def resolve(self, did: str, force_refresh: bool = False) -> DidDocument:
        local = self._keyring.document(did)
        if local is not None:
            return local
        forced = force_refresh and self._last_forced.add_if_absent(
            did, True, self._now() + self._refresh_interval
        )
        if not forced:
            cached = self._cache.get(did)
            if isinstance(cached, DidDocument):
                return cached
            if cached is not None:
                raise type(cached)(str(cached))  # a fresh instance: re-raising one grows its traceback
        inflight = self._inflight.get(did)
        if inflight is None:
            inflight = asyncio.ensure_future(self._fetch_and_cache(did))
            self._inflight[did] = inflight
            inflight.add_done_callback(lambda _f: self._inflight.pop(did, None))
        # shield: one caller giving up (client disconnect) must not cancel the fetch others wait on
        return await asyncio.shield(inflight)

    async def _fetch_and_cache(self, did: str) -> DidDocument:
        try:
            doc = await self._fetch(did)
        except DidNotFoundError as e:
            self._cache.put(did, e, self._now() + self._not_found_ttl)
            raise
        except DidResolutionError as e:
            self._cache.put(did, e, self._now() + self._error_ttl)
            raise
        self._cache.put(did, doc, self._now() + self._ttl)
        return doc

    def document_url(self, did: str) -> str:
        if did.startswith("did:plc:"):
            if not _PLC_RE.fullmatch(did):
                raise DidResolutionError(f"malformed did:plc: {did!r}")
            return f"{self._plc_url}/{did}"
        if did.startswith("did:web:"):
            ident = did[len("did:web:") :]
            if ":" in ident:
                raise DidResolutionError("path-style did:web is not supported")
            host = unquote(ident)
            if not _WEB_HOST_RE.fullmatch(host):
                raise DidResolutionError(f"malformed did:web host: {host!r}")
            hostname = host.rsplit(":", 1)[0] if ":" in host else host
            if parse_host_address(hostname) is None and not valid_host_name(hostname):
                raise DidResolutionError(f"malformed did:web host: {host!r}")
            if not self._policy.permits_host(hostname):
                # iss of a service JWT is attacker-chosen: do not let it aim fetches at internal addresses
                # (docs/security.md#outbound-requests; the session checks resolved addresses too)
                raise DidResolutionError("did:web host is an internal address")
            scheme = "http" if self._dev and hostname in _DEV_HOSTS else "https"
            return f"{scheme}://{host}/.well-known/did.json"
        raise DidResolutionError(f"unsupported DID method: {did[:64]!r}")

    async def _fetch(self, did: str) -> DidDocument:
        url = self.document_url(did)
        try:
            async with self._session.get(url, timeout=self._timeout, allow_redirects=False) as resp:
                if resp.status in (404, 410):
                    raise DidNotFoundError(f"{did} not found ({resp.status})")
                if resp.status != 200:
                    raise DidResolutionError(f"resolving {did}: HTTP {resp.status}")
                body = bytearray()
                async for chunk in resp.content.iter_chunked(16384):
                    body += chunk
                    if len(body) > MAX_DOCUMENT_BYTES:
                        raise DidResolutionError(f"resolving {did}: document too large")
        except (aiohttp.ClientError, TimeoutError, OSError) as e:
            # never the exception class or address: callers choose the DID (docs/security.md#error-messages)
            raise DidResolutionError(f"resolving {did}: {describe(e)}") from None
        try:
            return DidDocument.parse(did, orjson.loads(bytes(body)))
        except (orjson.JSONDecodeError, DidDocumentError) as e:
            raise DidResolutionError(f"resolving {did}: {e}") from None


class DocumentSource(Protocol):
    """What the verifiers need: ``DidResolver`` or any test double with the same ``resolve``."""

    async def resolve(self, did: str, force_refresh: bool = False) -> DidDocument: ...


async def documents_refreshed_once(resolver: DocumentSource, did: str) -> AsyncIterator[DidDocument]:
    """The DID's document, then (if the caller is still looking, i.e. the key did not verify) one forced
    refresh, so a rotated key is picked up. A refresh the resolver rate-limited returns the same document;
    that ends the iteration, since verifying it again would give the same answer.
    Raises DidResolutionError from the resolver."""
    previous = None
    for force in (False, True):
        doc = await resolver.resolve(did, force_refresh=force)
        if doc is previous:
            return
        previous = doc
        yield doc
