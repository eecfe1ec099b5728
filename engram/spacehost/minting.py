"""Minting space credentials for hosted spaces whose authority key engram holds (`engram credential
mint`, and `engram search` when it runs next to the data dir)."""

from __future__ import annotations

from ..auth.credential import MAX_LIFETIME, mint_space_credential
from ..auth.crypto_keys import KeyFormatError, PublicKey
from ..auth.keyring import LocalKeyring
from ..errors import InvalidInput
from ..identifiers import space_authority


def mint_for_space(keyring: LocalKeyring, space_uri: str, holder_did_key: str, ttl: int = 600) -> str:
    """A credential for `space_uri` bound to the holder's P-256 did:key, signed with the authority's key."""
    authority = space_authority(space_uri)
    if authority is None:
        raise InvalidInput(f"not a space URI: {space_uri!r}")
    key = keyring.private_key(authority)
    if key is None:
        raise InvalidInput(
            f"engram does not hold the key of {authority}, the space's authority: ask the authority for a "
            "credential (or put its key in <data dir>/keys/ with `engram keygen --operator`)",
            "AuthorityKeyUnknown",
        )
    try:
        if PublicKey.from_did_key(holder_did_key).alg != "ES256":
            raise InvalidInput("the holder key must be a P-256 did:key (did:key:zDn...)")
    except KeyFormatError as exc:
        raise InvalidInput(f"the holder is not a did:key: {exc}") from None
    if not 0 < ttl <= MAX_LIFETIME:
        raise InvalidInput(f"ttl must be between 1 and {MAX_LIFETIME} seconds")
    return mint_space_credential(
        key, issuer=authority, space=space_uri, holder_did_key=holder_did_key, ttl=ttl
    )
