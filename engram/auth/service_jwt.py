"""Inbound service auth (docs/protocol.md#service-auth-jwts): ``Authorization: Bearer <jwt>`` from space hosts
and admin scripts. Hand-written rather than ``atproto_server.auth.jwt.verify_jwt_async``, which accepts a
missing ``exp``, never checks ``lxm`` or ``jti`` and compares ``aud`` against a single value.

Checks, in order: Bearer header (else AuthRequired) → JWS shape, typ not at+jwt/refresh+jwt/dpop+jwt, alg
ES256|ES256K, kid absent or #atproto, iss a DID, exp/iat integers, jti present (BadJwt) → exp with 5 s skew
(JwtExpired) → iat not in the future and exp no more than 1 h ahead (BadJwt; bounds the replay cache) →
aud ∈ accepted set (BadJwtAudience) → lxm == NSID (BadJwtLexiconMethod) → signature by iss's #atproto
key, high-S tolerated as the reference does, one forced DID refresh (BadJwtSignature) → jti unused
(JwtReplayed). The jti is recorded only after the signature verifies, so forgeries cannot burn ids.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from engram.auth.crypto_keys import PrivateKey
from engram.auth.did_resolver import DidResolutionError, DocumentSource, documents_refreshed_once
from engram.auth.jws import JwsError, parse_jws, sign_jws
from engram.auth.replay import MemoryReplayGuard, ReplayGuard
from engram.errors import NotAllowed, NotAuthenticated, Replayed

CLOCK_SKEW = 5
MAX_AHEAD = 3600
_REFUSED_TYPS = frozenset({"at+jwt", "refresh+jwt", "dpop+jwt"})


@dataclass(frozen=True)
class ServiceAuth:
    iss: str
    aud: str
    jti: str
    exp: int
    sub: str | None = None  # delegation tokens name the space here (engram/auth/delegation.py)
    typ: str | None = None


def _err(name: str, message: str) -> NotAuthenticated:
    return NotAuthenticated(message, name)


class ServiceAuthVerifier:
    def __init__(
        self,
        service_did: str,
        resolver: DocumentSource,
        *,
        now: Callable[[], float] = time.time,
        audiences: Iterable[str] | None = None,
        replay_cache_size: int = 100_000,
        replays: ReplayGuard | None = None,
        replay_scope: str = "service_jwt",
    ):
        self._replay_scope = replay_scope
        self._audiences = frozenset(
            audiences or (service_did, f"{service_did}#atproto_space_syncer", f"{service_did}#engram")
        )
        self._resolver = resolver
        self._now = now
        # The server passes the store's guard, so a jti is used once across every serving process.
        self._replays = replays or MemoryReplayGuard(replay_cache_size, now)

    async def verify(
        self,
        authorization: str | None,
        lxm: str | None,
        *,
        issuer: str | None = None,
        audiences: frozenset[str] | None = None,
    ) -> ServiceAuth:
        """``lxm=None`` requires the token to carry no ``lxm`` (delegation tokens); ``audiences`` replaces
        the verifier's own set for this call (a space host answers for each authority it hosts).
        ``issuer``, when given, is the only DID allowed to sign: a token claiming another is refused
        (NotAllowed) before anything is resolved, so a caller cannot make engram fetch a DID document of
        its choosing (a did:web points the fetch at any host)."""
        scheme, _, token = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise _err("AuthRequired", "service auth requires Authorization: Bearer <jwt>")
        try:
            jws = parse_jws(token.strip())
        except JwsError as e:
            raise _err("BadJwt", f"malformed service JWT: {e}") from None
        h, p = jws.header, jws.payload
        typ = h.get("typ")
        if typ is not None and (not isinstance(typ, str) or typ.lower() in _REFUSED_TYPS):
            raise _err("BadJwt", f"JWT typ {h.get('typ')} is not a service-auth token")
        alg = h.get("alg")
        if alg not in ("ES256", "ES256K"):
            raise _err("BadJwt", "JWT alg must be ES256 or ES256K")
        if h.get("kid", "#atproto") != "#atproto":
            raise _err("BadJwt", "JWT kid must be #atproto")
        iss, aud, jti, exp, iat = p.get("iss"), p.get("aud"), p.get("jti"), p.get("exp"), p.get("iat")
        if not isinstance(iss, str) or not iss.startswith("did:"):
            raise _err("BadJwt", "JWT iss missing or not a DID")
        if type(exp) is not int:
            raise _err("BadJwt", "JWT exp missing or not an integer")
        if iat is not None and type(iat) is not int:
            raise _err("BadJwt", "JWT iat is not an integer")
        if not isinstance(jti, str) or not jti:
            raise _err("BadJwt", "JWT jti missing")
        now = self._now()
        if now - CLOCK_SKEW >= exp:
            raise _err("JwtExpired", "JWT expired")
        if (iat is not None and iat > now + CLOCK_SKEW) or exp > now + MAX_AHEAD + CLOCK_SKEW:
            raise _err("BadJwt", "JWT iat/exp too far in the future")
        if not isinstance(aud, str) or aud not in (self._audiences if audiences is None else audiences):
            raise _err("BadJwtAudience", "JWT aud is not this service")
        if p.get("lxm") != lxm:
            raise _err("BadJwtLexiconMethod", f"JWT lxm must be {lxm}" if lxm else "JWT must not carry lxm")
        issuer_did = iss.split("#", 1)[0]  # a #service suffix on iss is deprecated but legal
        if issuer is not None and issuer_did != issuer:
            raise NotAllowed(f"this call must be signed by {issuer}, not {issuer_did}")
        await self._verify_signature(issuer_did, alg, jws.signing_input, jws.signature)
        if not await self._replays.claim(self._replay_scope, issuer_did, jti, exp + CLOCK_SKEW):
            raise Replayed("JWT jti already used")
        sub = p.get("sub")
        return ServiceAuth(issuer_did, aud, jti, exp, sub if isinstance(sub, str) else None, typ)

    async def _verify_signature(self, did: str, alg: str, signing_input: bytes, signature: bytes) -> None:
        try:
            async for doc in documents_refreshed_once(self._resolver, did):
                key = doc.key("#atproto")
                if (
                    key is not None
                    and key.alg == alg
                    and key.verify(signing_input, signature, strict_low_s=False)
                ):
                    return
        except DidResolutionError as e:
            raise _err("BadJwtSignature", f"could not resolve JWT issuer: {e}") from None
        raise _err("BadJwtSignature", "JWT signature does not verify with the issuer's #atproto key")


def mint_service_jwt(
    key: PrivateKey, *, iss: str, aud: str, lxm: str, ttl: int = 60, now: Callable[[], float] = time.time
) -> str:
    iat = int(now())
    payload = {"iss": iss, "aud": aud, "lxm": lxm, "iat": iat, "exp": iat + ttl, "jti": secrets.token_hex(16)}
    return sign_jws(key, {"typ": "JWT"}, payload)
