"""Client attestations sent to ``getSpaceCredential`` (docs/space-host.md): a JWT an app signs with its
OAuth client key, so the space host knows which client asks.

Checks: ``typ`` ``atproto-client-attestation+jwt``, ``alg`` ES256/ES256K, a ``kid``; ``iss`` = ``sub`` =
the client_id (the URL of its client metadata); ``aud`` = ``<authority>#atproto_space_host`` (or the bare
authority DID); ``exp`` not passed and at most 60 s (+ skew) ahead, ``iat`` not in the future; then the
client metadata is fetched from ``iss`` (its ``client_id`` must equal ``iss``), the key named by ``kid`` is
taken from its ``jwks`` (or ``jwks_uri``), the signature verified, and the ``jti`` consumed. Every failure
is 401 ``InvalidClientAttestation``.

Hand-written instead of joserfc/authlib: the JWS part is engram's own (``engram/auth/jws.py``), and the only
JWK shapes needed are EC P-256 and secp256k1 points. Metadata is fetched over https only (http to
localhost in dev mode) through the guarded session, never from an internal address
(docs/security.md#outbound-requests), at most 64 KiB, and cached for 5 minutes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson

from engram.auth.crypto_keys import KeyFormatError, PublicKey
from engram.auth.jws import JwsError, b64url_decode, parse_jws
from engram.auth.replay import MemoryReplayGuard, ReplayGuard
from engram.auth.ttl_cache import TtlCache
from engram.errors import NotAuthenticated
from engram.outbound import OutboundPolicy, OutboundRefused, describe

ATTESTATION_TYP = "atproto-client-attestation+jwt"
CLOCK_SKEW = 5
MAX_AHEAD = 60
MAX_METADATA_BYTES = 64 * 1024
METADATA_TTL = 300.0
_CURVES = {"P-256": "ES256", "secp256k1": "ES256K"}


def _invalid(message: str) -> NotAuthenticated:
    return NotAuthenticated(message, "InvalidClientAttestation")


def jwk_public_key(jwk: Any) -> PublicKey:
    """An EC JWK (P-256 or secp256k1) as a PublicKey; KeyFormatError for anything else."""
    if not isinstance(jwk, dict) or jwk.get("kty") != "EC" or jwk.get("crv") not in _CURVES:
        raise KeyFormatError("only EC P-256 and secp256k1 JWKs are supported")
    try:
        x, y = b64url_decode(jwk["x"]), b64url_decode(jwk["y"])
    except (KeyError, TypeError, JwsError):
        raise KeyFormatError("JWK x/y missing or not base64url") from None
    if len(x) != 32 or len(y) != 32:
        raise KeyFormatError("JWK x and y must be 32 bytes")
    return PublicKey.from_point(_CURVES[jwk["crv"]], b"\x04" + x + y)  # type: ignore[arg-type]


class ClientAttestationVerifier:
    def __init__(
        self,
        session: aiohttp.ClientSession,
        *,
        dev: bool = False,
        now: Callable[[], float] = time.time,
        timeout: float = 3.0,
        replays: ReplayGuard | None = None,
        policy: OutboundPolicy | None = None,
    ):
        self._session = session
        self._dev = dev
        self._policy = policy or OutboundPolicy(dev=dev)
        self._now = now
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._metadata: TtlCache[dict] = TtlCache(1000, time.monotonic)
        # The server passes the store's guard, so an attestation is used once across every serving process.
        self._replays = replays or MemoryReplayGuard(100_000, now)

    async def verify(self, token: str, authority: str) -> str:
        """The attested client_id."""
        try:
            jws = parse_jws(token)
        except JwsError as exc:
            raise _invalid(f"malformed client attestation: {exc}") from None
        h, p = jws.header, jws.payload
        if h.get("typ") != ATTESTATION_TYP:
            raise _invalid(f"client attestation typ must be {ATTESTATION_TYP}")
        if h.get("alg") not in ("ES256", "ES256K") or not isinstance(h.get("kid"), str):
            raise _invalid("client attestation needs alg ES256/ES256K and a kid")
        client_id, jti, exp, iat = p.get("iss"), p.get("jti"), p.get("exp"), p.get("iat")
        if not isinstance(client_id, str) or p.get("sub") != client_id:
            raise _invalid("client attestation iss and sub must both be the client_id")
        if p.get("aud") not in (f"{authority}#atproto_space_host", authority):
            raise _invalid("client attestation aud is not this space host")
        if not isinstance(jti, str) or not jti or type(exp) is not int:
            raise _invalid("client attestation needs a jti and an integer exp")
        now = self._now()
        if now - CLOCK_SKEW >= exp or exp > now + MAX_AHEAD + CLOCK_SKEW:
            raise _invalid("client attestation expired or lives longer than 60 s")
        if iat is not None and (type(iat) is not int or iat > now + CLOCK_SKEW):
            raise _invalid("client attestation iat is in the future")
        key = await self._client_key(client_id, h["kid"])
        if key.alg != h["alg"] or not key.verify(jws.signing_input, jws.signature, strict_low_s=False):
            raise _invalid("client attestation signature does not verify with the client's key")
        if not await self._replays.claim("client_attestation", client_id, jti, exp + CLOCK_SKEW):
            raise _invalid("client attestation jti already used")
        return client_id

    async def _client_key(self, client_id: str, kid: str) -> PublicKey:
        metadata = await self._fetch_json(client_id)
        if metadata.get("client_id") != client_id:
            raise _invalid("client metadata client_id does not match the attestation's iss")
        jwks = metadata.get("jwks")
        if jwks is None and isinstance(metadata.get("jwks_uri"), str):
            jwks = await self._fetch_json(metadata["jwks_uri"])
        keys = jwks.get("keys") if isinstance(jwks, dict) else None
        for jwk in keys if isinstance(keys, list) else []:
            if isinstance(jwk, dict) and jwk.get("kid") == kid:
                try:
                    return jwk_public_key(jwk)
                except KeyFormatError as exc:
                    raise _invalid(f"client key {kid}: {exc}") from None
        raise _invalid(f"the client publishes no key {kid!r}")

    def _check_url(self, url: str) -> None:
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
        except ValueError:
            raise _invalid("client metadata URL is not a valid URL") from None
        local = host in ("localhost", "127.0.0.1")
        if parts.scheme != "https" and not (self._dev and parts.scheme == "http" and local):
            raise _invalid("client metadata must be served over https")
        if not self._policy.permits_host(host):
            raise _invalid("client metadata host is an internal address")
        try:  # the rest of what no request could be built from (port, credentials, host name)
            self._policy.check_url(url, credential=False)
        except OutboundRefused as exc:
            raise _invalid(f"client metadata URL refused: {exc}") from None

    async def _fetch_json(self, url: str) -> dict:
        cached = self._metadata.get(url)
        if cached is not None:
            return cached
        self._check_url(url)
        try:
            async with self._session.get(url, timeout=self._timeout, allow_redirects=False) as resp:
                if resp.status != 200:
                    raise _invalid(f"fetching {url}: HTTP {resp.status}")
                body = bytearray()
                async for chunk in resp.content.iter_chunked(16384):
                    body += chunk
                    if len(body) > MAX_METADATA_BYTES:
                        break
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise _invalid(f"fetching client metadata: {describe(exc)}") from None
        try:
            value = orjson.loads(bytes(body)) if len(body) <= MAX_METADATA_BYTES else None
        except orjson.JSONDecodeError:
            value = None
        if not isinstance(value, dict):
            raise _invalid(f"{url} did not answer a JSON object of at most 64 KiB")
        self._metadata.put(url, value, time.monotonic() + METADATA_TTL)
        return value
