"""Admin requests signed by an operator DID, built on ``http_message_signatures``
(docs/protocol.md#admin-signatures).

Profile: label/tag ``engram-admin``; ``keyid`` = ``{did}#atproto``; covered ``@method @target-uri
content-digest``; ``created`` and ``nonce`` required; 300 s window; nonce replay cache; DID allow-list.
- Content-Digest is required even for an empty body (GET): one rule for every request, and the signature
  then also proves the body was empty.
- ``@target-uri`` is rebuilt from the configured public URL + the request's path and query, never from the
  proxy-facing Host/scheme.
- Algorithms: P-256 under its IANA id ``ecdsa-p256-sha256`` and secp256k1 under the private id
  ``ecdsa-secp256k1-sha256`` (there is no registered one); both strict low-S 64-byte r||s, which our signer
  always emits (the library's built-in ECDSA_P256_SHA256 would accept high-S and DER conversion).
- The library's key resolver is synchronous, so the DID's key is resolved asynchronously FIRST (keyid read
  from Signature-Input with http_sf), then the sync verify runs with a one-key resolver. A cryptographic
  failure (only that) retries once with a force-refreshed DID document.
"""

from __future__ import annotations

import datetime
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import http_sf
from http_message_signatures import (
    HTTPMessageSignaturesException,
    HTTPMessageSigner,
    HTTPMessageVerifier,
    HTTPSignatureAlgorithm,
    HTTPSignatureKeyResolver,
    InvalidSignature,
)
from multidict import CIMultiDict
from yarl import URL

from engram.auth.crypto_keys import PrivateKey, PublicKey
from engram.auth.did_resolver import DidResolutionError, DocumentSource, documents_refreshed_once
from engram.auth.replay import MemoryReplayGuard, ReplayGuard
from engram.errors import NotAllowed, NotAuthenticated

TAG = "engram-admin"
COMPONENTS = ("@method", "@target-uri", "content-digest")
MAX_AGE = 300
CLOCK_SKEW = 5


class _CryptoMismatch(Exception):
    """Raised by our algorithm classes so a cryptographic failure can be told apart from policy errors."""


class _AtprotoEcdsa(HTTPSignatureAlgorithm):
    curve = ""

    def __init__(self, public_key: PublicKey | None = None, private_key: PrivateKey | None = None):
        self.public_key, self.private_key = public_key, private_key

    def sign(self, message: bytes) -> bytes:
        assert self.private_key is not None and self.private_key.alg == self.curve
        return self.private_key.sign(message)

    def verify(self, signature: bytes, message: bytes) -> None:
        key = self.public_key
        if key is None or key.alg != self.curve or not key.verify(message, signature, strict_low_s=True):
            raise _CryptoMismatch("signature does not verify")


class EcdsaP256LowS(_AtprotoEcdsa):
    algorithm_id = "ecdsa-p256-sha256"
    curve = "ES256"


class EcdsaK256LowS(_AtprotoEcdsa):
    algorithm_id = "ecdsa-secp256k1-sha256"
    curve = "ES256K"


_ALG_CLASS: dict[str, type[_AtprotoEcdsa]] = {"ES256": EcdsaP256LowS, "ES256K": EcdsaK256LowS}


class _OneKey(HTTPSignatureKeyResolver):
    def __init__(self, key_id: str, public: PublicKey | None = None, private: PrivateKey | None = None):
        self.key_id, self.public, self.private = key_id, public, private

    def resolve_public_key(self, key_id: str) -> Any:
        return self.public if key_id == self.key_id else None

    def resolve_private_key(self, key_id: str) -> Any:
        return self.private if key_id == self.key_id else None


class _ClockedVerifier(HTTPMessageVerifier):
    """The library reads datetime.now(); this takes the injected clock so the window is testable."""

    def __init__(self, now: Callable[[], float], **kwargs: Any):
        super().__init__(**kwargs)
        self._now = now

    def validate_created_and_expires(self, sig_input: Any, max_age: datetime.timedelta | None = None) -> None:
        now = self._now()
        created, expires = sig_input.params.get("created"), sig_input.params.get("expires")
        if type(created) is not int:
            raise InvalidSignature('Signature is missing a required integer "created" parameter')
        if created > now + CLOCK_SKEW:
            raise InvalidSignature('Signature "created" parameter is in the future')
        if max_age is not None and created + max_age.total_seconds() < now - CLOCK_SKEW:
            raise InvalidSignature(f"Signature is older than {max_age}")
        if expires is not None and (type(expires) is not int or expires < now - CLOCK_SKEW):
            raise InvalidSignature('Signature "expires" parameter is invalid or in the past')


@dataclass
class _MessageView:
    method: str
    url: str
    headers: Any


def _bad(message: str) -> NotAuthenticated:
    return NotAuthenticated(message, "BadAdminSignature")


def _admin_keyid(headers: Any) -> str:
    lines = headers.getall("Signature-Input", []) if hasattr(headers, "getall") else []
    if not lines:
        raise _bad("admin requests must be signed (Signature-Input missing)")
    try:
        parsed = http_sf.parse(", ".join(lines).encode("latin-1"), tltype="dictionary")
    except ValueError:  # http_sf's StructuredFieldError, or text that is not Latin-1
        raise _bad("Signature-Input is not a valid structured dictionary") from None
    members = parsed.values()  # type: ignore[union-attr]
    keyids = [params.get("keyid") for _, params in members if params.get("tag") == TAG]
    if len(keyids) != 1 or not isinstance(keyids[0], str):
        raise _bad(f"exactly one signature tagged {TAG} with a keyid is required")
    return keyids[0]


class AdminVerifier:
    def __init__(
        self,
        public_url: str,
        allowed_dids: Iterable[str],
        resolver: DocumentSource,
        *,
        now: Callable[[], float] = time.time,
        nonce_cache_size: int = 100_000,
        replays: ReplayGuard | None = None,
    ):
        self._public_url = public_url.rstrip("/")
        self._allowed = frozenset(allowed_dids)
        self._resolver = resolver
        self._now = now
        # The server passes the store's guard, so a nonce is used once across every serving process.
        self._replays = replays or MemoryReplayGuard(nonce_cache_size, now)

    async def verify(self, method: str, path_qs: str, headers: Any, body: bytes) -> str:
        """The verified operator DID; 401 BadAdminSignature, or 403 Forbidden for a DID not allowed."""
        if not path_qs.startswith("/"):
            raise _bad("request path must be absolute")
        keyid = _admin_keyid(headers)
        did, _, fragment = keyid.partition("#")
        if fragment != "atproto" or not did.startswith("did:"):
            raise _bad("admin signature keyid must be {did}#atproto")
        if did not in self._allowed:
            raise NotAllowed(f"{did} is not an admin DID", "Forbidden")
        try:
            # yarl-normalised on both sides (the signer does the same), so a client that sends %3A where
            # another sends ":" in a query still matches; yarl never decodes reserved chars such as %2F.
            target = str(URL(self._public_url + path_qs))
        except ValueError:
            raise _bad("request target is not a valid URL") from None
        view = _MessageView(method.upper(), target, headers)
        result = await self._verify_with_fresh_key(did, keyid, view, body)
        nonce, created = result.parameters.get("nonce"), result.parameters.get("created")
        if not isinstance(nonce, str) or not nonce:
            raise _bad("admin signature nonce is required")
        if not await self._replays.claim("admin_nonce", did, nonce, created + MAX_AGE + 2 * CLOCK_SKEW):
            raise _bad("admin signature nonce already used")
        return did

    async def _verify_with_fresh_key(self, did: str, keyid: str, view: _MessageView, body: bytes) -> Any:
        try:
            async for doc in documents_refreshed_once(self._resolver, did):
                key = doc.key("#atproto")
                if key is None:
                    continue
                verifier = _ClockedVerifier(
                    self._now,
                    signature_algorithm=_ALG_CLASS[key.alg],
                    key_resolver=_OneKey(keyid, public=key),
                )
                try:
                    (result,) = verifier.verify(
                        view,
                        max_age=datetime.timedelta(seconds=MAX_AGE),
                        expect_tag=TAG,
                        require_components=COMPONENTS,
                        body=body,
                    )
                    return result
                except InvalidSignature as e:
                    if not isinstance(e.__cause__, _CryptoMismatch):
                        raise _bad(f"admin signature refused: {e}") from None
                except (
                    HTTPMessageSignaturesException
                ) as e:  # selection policy errors, e.g. two tagged signatures
                    raise _bad(f"admin signature refused: {e}") from None
        except DidResolutionError as e:
            raise _bad(f"could not resolve {did}: {e}") from None
        # the commonest cause is not the key: the signature covers @target-uri, which this server rebuilds
        # from its public URL, so a client that signed for another spelling of the host fails here too
        raise _bad(
            "admin signature does not verify with the DID's #atproto key over this request as the server"
            f" reads it ({view.method} {view.url}): sign the URL with this server's public URL,"
            f" {self._public_url}"
        )


def sign_admin_request(
    key: PrivateKey,
    did: str,
    method: str,
    url: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    now: Callable[[], float] = time.time,
    nonce: str | None = None,
) -> dict[str, str]:
    """``headers`` plus Content-Digest, Signature-Input and Signature for an admin request to ``url``
    (the absolute public URL, including the query string). The URL is normalised with yarl first, exactly
    as aiohttp's client will put it on the wire (e.g. ``%3A`` in a query becomes ``:``), so the server's
    rebuilt @target-uri matches; send it with aiohttp, or with ``yarl.URL(url)`` as given here."""
    keyid = f"{did}#atproto"
    message = _MessageView(method.upper(), str(URL(url)), CIMultiDict(headers or {}))
    signer = HTTPMessageSigner(
        signature_algorithm=_ALG_CLASS[key.alg], key_resolver=_OneKey(keyid, private=key)
    )
    signer.sign(
        message,
        key_id=keyid,
        created=datetime.datetime.fromtimestamp(int(now()), datetime.UTC),
        nonce=nonce or secrets.token_urlsafe(16),
        label=TAG,
        tag=TAG,
        covered_component_ids=("@method", "@target-uri"),
        body=body,
    )
    return dict(message.headers)
