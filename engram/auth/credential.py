"""Space credentials (docs/protocol.md#space-credentials): verification and minting.

Every failure is 401 ``InvalidToken``. Verified credentials are cached by sha256(JWT) until ``exp``; a cache
hit skips only DID resolution and the signature: the time window and sub/iss checks run on every call.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from engram.auth.crypto_keys import KeyFormatError, PrivateKey, PublicKey
from engram.auth.did_resolver import DidResolutionError, DocumentSource, documents_refreshed_once
from engram.auth.jws import JwsError, parse_jws, sign_jws
from engram.auth.ttl_cache import TtlCache
from engram.errors import NotAuthenticated
from engram.identifiers import space_authority

CREDENTIAL_TYP = "atproto-space-credential+jwt"
CREDENTIAL_KIDS = frozenset({"#atproto", "#atproto_space"})
CLOCK_SKEW = 5
MAX_LIFETIME = 3600


@dataclass(frozen=True)
class Credential:
    issuer: str
    space: str
    holder_key: PublicKey  # from cnf.kid; may be secp256k1 here, the request signature check refuses that
    jti: str
    iat: int
    exp: int


def _invalid(message: str) -> NotAuthenticated:
    return NotAuthenticated(message, "InvalidToken")


def _int_claim(payload: dict, name: str) -> int:
    value = payload.get(name)
    if type(value) is not int:  # bool is an int subclass; floats are not NumericDate integers here
        raise _invalid(f"credential {name} missing or not an integer")
    return value


def _parse_claims(token: str) -> tuple[Credential, str, str, bytes, bytes]:
    """Structural checks (no time, no space); returns the credential, alg, kid, signing input, signature."""
    try:
        jws = parse_jws(token)
    except JwsError as e:
        raise _invalid(f"malformed credential: {e}") from None
    h, p = jws.header, jws.payload
    if h.get("typ") != CREDENTIAL_TYP:
        raise _invalid(f"credential typ must be {CREDENTIAL_TYP}")
    alg, kid = h.get("alg"), h.get("kid")
    if alg not in ("ES256", "ES256K"):
        raise _invalid("credential alg must be ES256 or ES256K")
    if not isinstance(kid, str) or kid not in CREDENTIAL_KIDS:
        raise _invalid("credential kid must be #atproto or #atproto_space")
    iss, sub, jti, cnf = p.get("iss"), p.get("sub"), p.get("jti"), p.get("cnf")
    if not isinstance(iss, str) or not iss.startswith("did:"):
        raise _invalid("credential iss missing or not a DID")
    if not isinstance(sub, str) or not sub:
        raise _invalid("credential sub missing")
    if not isinstance(jti, str) or not jti:
        raise _invalid("credential jti missing")
    if not isinstance(cnf, dict) or not isinstance(cnf.get("kid"), str):
        raise _invalid("credential cnf.kid missing")
    try:
        holder = PublicKey.from_did_key(cnf["kid"])
    except KeyFormatError as e:
        raise _invalid(f"credential cnf.kid is not a usable did:key: {e}") from None
    iat, exp = _int_claim(p, "iat"), _int_claim(p, "exp")
    cred = Credential(iss, sub, holder, jti, iat, exp)
    return cred, alg, kid, jws.signing_input, jws.signature


def check_window_and_space(cred: Credential, space: str, now: float) -> None:
    if cred.exp <= cred.iat:
        raise _invalid("credential exp is not after iat")
    if cred.exp - cred.iat > MAX_LIFETIME:
        raise _invalid("credential lifetime exceeds 3600 s")
    if now - CLOCK_SKEW >= cred.exp:
        raise _invalid("credential expired")
    if cred.iat > now + CLOCK_SKEW:
        raise _invalid("credential iat is in the future")
    if cred.space != space:
        raise _invalid("credential is for another space")
    if space_authority(space) != cred.issuer:
        raise _invalid("credential issuer is not the space authority")


class CredentialVerifier:
    def __init__(
        self, resolver: DocumentSource, *, now: Callable[[], float] = time.time, cache_size: int = 10_000
    ):
        self._resolver = resolver
        self._now = now
        self._verified: TtlCache[Credential] = TtlCache(cache_size, now)

    async def verify(self, token: str, space: str) -> Credential:
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        cached = self._verified.get(key)
        if cached is not None:
            check_window_and_space(cached, space, self._now())
            return cached
        cred, alg, kid, signing_input, signature = _parse_claims(token)
        check_window_and_space(cred, space, self._now())
        await self._verify_signature(cred.issuer, alg, kid, signing_input, signature)
        # cached until exp + skew: check_window_and_space still refuses it once expired
        self._verified.put(key, cred, cred.exp + CLOCK_SKEW)
        return cred

    async def _verify_signature(self, iss: str, alg: str, kid: str, signing_input: bytes, sig: bytes) -> None:
        reason = ""
        try:
            async for doc in documents_refreshed_once(self._resolver, iss):
                signing_key = doc.key(kid)
                if signing_key is None:
                    reason = f"the issuer's DID document has no usable {kid} key"
                elif signing_key.alg != alg:
                    reason = f"credential alg {alg} does not match the issuer's {kid} key ({signing_key.alg})"
                elif signing_key.verify(signing_input, sig, strict_low_s=True):
                    return
                else:
                    reason = "credential signature does not verify with the issuer's key (strict low-S)"
        except DidResolutionError as e:
            raise _invalid(f"could not resolve credential issuer: {e}") from None
        raise _invalid(reason)


def mint_space_credential(
    authority_key: PrivateKey,
    *,
    issuer: str,
    space: str,
    holder_did_key: str,
    ttl: int = 600,
    kid: str = "#atproto",
    now: Callable[[], float] = time.time,
) -> str:
    """A credential for ``space`` bound to the holder's P-256 did:key, signed low-S by the authority."""
    if not 0 < ttl <= MAX_LIFETIME:
        raise ValueError("ttl must be in (0, 3600]")
    if not isinstance(kid, str) or kid not in CREDENTIAL_KIDS:
        raise ValueError("kid must be #atproto or #atproto_space")
    if space_authority(space) != issuer:
        raise ValueError("issuer must be the space's authority")
    if PublicKey.from_did_key(holder_did_key).alg != "ES256":
        raise ValueError("holder key must be a P-256 did:key")
    iat = int(now())
    payload = {
        "iss": issuer,
        "sub": space,
        "cnf": {"kid": holder_did_key},
        "iat": iat,
        "exp": iat + ttl,
        "jti": secrets.token_hex(16),
    }
    return sign_jws(authority_key, {"typ": CREDENTIAL_TYP, "kid": kid}, payload)
