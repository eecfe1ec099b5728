"""Reader auth for garden.engram methods: docs/protocol.md#reader-auth steps 2-5, in order.

2. exactly one Authorization and one Atproto-Space-Audience, scheme Atproto-Space → else AuthRequired
3. the space credential (``CredentialVerifier``; cached by JWT hash) → else InvalidToken
4. Atproto-Space-Audience == engram's service DID → else BadSpaceSignature
5. the RFC 9421 atproto-space signature with cnf.kid → else BadSpaceSignature
A request whose four auth headers are byte-identical to one that passed steps 3-5 (and that asks for the
same audience) reuses that verdict until the credential's exp; the credential's window and space are
checked again on every request. Step 1 (the space exists) is the caller's.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from engram.auth.credential import Credential, CredentialVerifier, check_window_and_space
from engram.auth.crypto_keys import PublicKey
from engram.auth.did_resolver import DocumentSource
from engram.auth.space_signature import Headers, verify_space_signature
from engram.auth.ttl_cache import TtlCache
from engram.errors import NotAuthenticated

SCHEME = "atproto-space"
SIGNATURE_CACHE_SIZE = 10_000


@dataclass(frozen=True)
class ReaderAuth:
    space: str
    issuer: str
    holder_key: PublicKey
    jti: str
    exp: int


class ReaderVerifier:
    def __init__(self, service_did: str, resolver: DocumentSource, now: Callable[[], float] = time.time):
        self.service_did = service_did
        self.credentials = CredentialVerifier(resolver, now=now)
        # Verified requests (docs/protocol.md#the-atproto-space-request-signature): the signature base is
        # built only from Authorization, Atproto-Space-Audience and Signature-Input, so the same bytes of
        # those plus Signature verify the same way every time; a client reuses one signature for the
        # credential's whole life. Entries live until the credential's exp, and the credential's window
        # and space are still checked on every request, so an expired credential is refused even while
        # cached, and a request for another space is refused.
        self._now = now
        # Each entry keeps the verdict built from it too: a frozen value, handed out again as it is.
        self._verified: TtlCache[tuple[Credential, ReaderAuth]] = TtlCache(SIGNATURE_CACHE_SIZE, now)

    async def verify(self, headers: Headers, space: str, audience: str | None = None) -> ReaderAuth:
        """``audience``: the DID the signature must be addressed to (default engram's own; repo reads of a
        hosted space are addressed to the repo owner, docs/space-host.md)."""
        audience = audience or self.service_did
        authorizations = headers.getall("Authorization", [])
        audiences = headers.getall("Atproto-Space-Audience", [])
        if len(authorizations) != 1 or len(audiences) != 1:
            raise NotAuthenticated(
                "exactly one Authorization and one Atproto-Space-Audience header are required", "AuthRequired"
            )
        request_key = _signature_key(headers, authorizations[0], audiences[0], audience)
        verified = self._verified.get(request_key)
        if verified is not None:  # these exact bytes passed steps 3-5: only the window and space can change
            check_window_and_space(verified[0], space, self._now())
            return verified[1]
        scheme, _, token = authorizations[0].strip().partition(" ")
        token = token.strip()
        if scheme.lower() != SCHEME or not token:
            raise NotAuthenticated("Authorization scheme must be Atproto-Space", "AuthRequired")
        cred = await self.credentials.verify(token, space)
        if audiences[0].strip() != audience:
            raise NotAuthenticated(f"Atproto-Space-Audience must be {audience}", "BadSpaceSignature")
        verify_space_signature(headers, cred.holder_key)
        auth = ReaderAuth(cred.space, cred.issuer, cred.holder_key, cred.jti, cred.exp)
        self._verified.put(request_key, (cred, auth), cred.exp)
        return auth


def _signature_key(headers: Headers, authorization: str, audience_header: str, audience: str) -> tuple:
    """Every byte step 5 reads: the two covered headers, all Signature-Input and Signature lines, and the
    audience the caller requires (the exchange form never reaches this cache)."""
    return (
        authorization,
        audience_header,
        tuple(headers.getall("Signature-Input", ())),
        tuple(headers.getall("Signature", ())),
        audience,
    )
