"""The ``atproto-space`` RFC 9421 profile: verify and sign
(docs/protocol.md#the-atproto-space-request-signature).

Hand-written on top of ``http_sf`` instead of ``http_message_signatures``: that library requires
``keyid`` and (by default) ``created``, neither of which atproto-space clients send.

Verification rules (every failure is 401 ``BadSpaceSignature``):
- ``Signature-Input`` and ``Signature`` are parsed as RFC 8941 dictionaries (all field lines joined); the
  ``atproto-space`` member is used and other labels are ignored; a duplicated ``atproto-space`` is refused.
- Covered components are exactly ``("authorization" "atproto-space-audience")`` (credential use) or
  ``("authorization")`` (the exchange), without component parameters.
- Parameters: only ``keyid`` (must equal the expected holder did:key) and ``alg`` (must be
  ``ecdsa-p256-sha256``), in any order, each optional on credential use; ``keyid`` is required on the
  exchange. Unknown parameters (``created``, ``nonce``...) are REFUSED, as the strict upstream revision
  does: no client sends them, and a verifier that ignores a parameter it cannot honour (e.g. ``expires``)
  would be misleading the signer (docs/protocol.md#the-atproto-space-request-signature).
- The signature base is rebuilt from the received inner list re-serialised by ``http_sf`` (canonical).
- The holder key must be P-256; the signature is 64-byte r||s (DER refused), high- or low-S accepted;
  ``http_sf`` accepts padded and unpadded base64 byte sequences.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Mapping
from typing import Any

import http_sf
from http_sf.innerlist import ser_innerlist
from multidict import CIMultiDict, CIMultiDictProxy

from engram.auth.crypto_keys import KeyFormatError, PrivateKey, PublicKey
from engram.errors import NotAuthenticated

LABEL = "atproto-space"
ALG = "ecdsa-p256-sha256"
USE_COMPONENTS = ("authorization", "atproto-space-audience")
EXCHANGE_COMPONENTS = ("authorization",)
_ALLOWED_PARAMS = frozenset({"keyid", "alg"})

Headers = CIMultiDictProxy[str] | CIMultiDict[str]


def _bad(message: str) -> NotAuthenticated:
    return NotAuthenticated(message, "BadSpaceSignature")


def _reject_duplicate_label(key: str, context: str) -> None:
    if context == "dictionary" and key == LABEL:
        raise _bad(f"duplicate {LABEL} signature")


def _member(headers: Headers, name: str) -> Any:
    lines = headers.getall(name, [])
    if not lines:
        raise _bad(f"missing {name} header")
    try:
        member = _parse_label(", ".join(lines))
    except ValueError:  # http_sf's StructuredFieldError, or text that is not Latin-1
        raise _bad(f"{name} is not a valid structured dictionary") from None
    if member is None:
        raise _bad(f"no {LABEL} signature in {name}")
    return member


# Cached by field text: a client reuses one signature for the credential's life, and http_sf's pure-Python
# per-character checks cost more than the ECDSA verify. Results are shared: never mutate them.
@functools.lru_cache(maxsize=4096)
def _parse_label(text: str) -> Any:
    parsed = http_sf.parse(
        text.encode("latin-1"), tltype="dictionary", on_duplicate_key=_reject_duplicate_label
    )
    return parsed.get(LABEL)  # type: ignore[union-attr]


@functools.lru_cache(maxsize=4096)
def _serialized_inner(text: str) -> str:
    return ser_innerlist(_parse_label(text))


def verify_space_signature(
    headers: Headers,
    holder_key: PublicKey,
    *,
    components: tuple[str, ...] = USE_COMPONENTS,
    require_keyid: bool = False,
) -> None:
    """Verify the atproto-space signature over ``components`` with ``holder_key``; raise BadSpaceSignature."""
    if holder_key.alg != "ES256":
        raise _bad("the holder key (cnf.kid) must be a P-256 key")
    sig_input = _member(headers, "Signature-Input")
    signature = _member(headers, "Signature")
    inner, params = sig_input
    if not isinstance(inner, list):
        raise _bad("Signature-Input member must be an inner list")
    # type(...) is str: http_sf Tokens compare equal to str, but `alg=ecdsa-p256-sha256` (a Token) or a
    # token component name is not the profile, and would re-serialise differently from a String.
    names = tuple(name for name, _ in inner)
    if (
        names != components
        or any(type(name) is not str for name in names)
        or any(item_params for _, item_params in inner)
    ):
        raise _bad(f"signature must cover exactly {components}")
    unknown = set(params) - _ALLOWED_PARAMS
    if unknown:
        raise _bad(f"unsupported signature parameters: {sorted(unknown)}")
    if "alg" in params and (type(params["alg"]) is not str or params["alg"] != ALG):
        raise _bad(f'signature alg must be the string "{ALG}"')
    if "keyid" in params:
        if type(params["keyid"]) is not str or params["keyid"] != holder_key.did_key:
            raise _bad("signature keyid does not match the credential's cnf.kid")
    elif require_keyid:
        raise _bad("signature keyid is required")
    sig_bytes = signature[0]
    if not isinstance(sig_bytes, bytes) or len(sig_bytes) != 64:
        raise _bad("signature must be a 64-byte r||s byte sequence")
    base = _signature_base(
        headers, components, _serialized_inner(", ".join(headers.getall("Signature-Input")))
    )
    if not holder_key.verify(base, sig_bytes, strict_low_s=False):
        raise _bad("signature does not verify")


def verify_exchange_signature(headers: Headers) -> PublicKey:
    """The ``getSpaceCredential`` form: covers only ``authorization``, ``keyid`` names the key to bind.
    Returns that key once the signature verifies with it."""
    _inner, params = _member(headers, "Signature-Input")
    keyid = params.get("keyid")
    try:
        key = PublicKey.from_did_key(keyid)
    except KeyFormatError:
        raise _bad("signature keyid must be a P-256 did:key") from None
    verify_space_signature(headers, key, components=EXCHANGE_COMPONENTS, require_keyid=True)
    return key


def _signature_base(headers: Mapping[str, str] | Headers, components: tuple[str, ...], params: str) -> bytes:
    lines = []
    for name in components:
        values = headers.getall(name, []) if hasattr(headers, "getall") else [headers[name]]
        if len(values) != 1:
            raise _bad(f"covered header {name} must appear exactly once")
        value = values[0].strip()
        if "\n" in value or "\r" in value:
            raise _bad(f"covered header {name} contains a newline")
        lines.append(f'"{name}": {value}')
    lines.append(f'"@signature-params": {params}')
    try:
        return "\n".join(lines).encode("ascii")
    except UnicodeEncodeError:
        raise _bad("covered headers must be ASCII") from None


def _sign(holder_key: PrivateKey, headers: dict[str, str], components: tuple[str, ...], params: dict) -> None:
    if holder_key.alg != "ES256":
        raise ValueError("atproto-space holder keys are P-256")
    inner: tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]] = (
        [(name, {}) for name in components],
        params,
    )
    serialized = ser_innerlist(inner)  # type: ignore[arg-type]
    base = _signature_base(CIMultiDict(headers), components, serialized)
    headers["Signature-Input"] = f"{LABEL}={serialized}"
    headers["Signature"] = f"{LABEL}=:{base64.b64encode(holder_key.sign(base)).decode('ascii')}:"


def sign_space_request(
    holder_key: PrivateKey, credential_jwt: str, audience: str, *, with_params: bool = True
) -> dict[str, str]:
    """Headers for a credential-use request. Emits ``;keyid=...;alg="ecdsa-p256-sha256"`` by default
    (accepted by every known verifier, docs/protocol.md#the-atproto-space-request-signature);
    ``with_params=False`` emits none."""
    headers = {"Authorization": f"Atproto-Space {credential_jwt}", "Atproto-Space-Audience": audience}
    params = {"keyid": holder_key.public_key.did_key, "alg": ALG} if with_params else {}
    _sign(holder_key, headers, USE_COMPONENTS, params)
    return headers


def sign_space_exchange(holder_key: PrivateKey, authorization: str) -> dict[str, str]:
    """Headers for ``getSpaceCredential``: ``authorization`` is e.g. ``"Bearer <delegation token>"``."""
    headers = {"Authorization": authorization}
    _sign(holder_key, headers, EXCHANGE_COMPONENTS, {"keyid": holder_key.public_key.did_key, "alg": ALG})
    return headers
