"""Signed reader headers for a space engram hosts itself (it holds the authority's key), for tests that
open the data directory next to a running `engram serve` and then call it over HTTP."""

from __future__ import annotations

from engram.auth.crypto_keys import PrivateKey
from engram.auth.space_signature import sign_space_request
from engram.spacehost.minting import mint_for_space


def hosted_reader_headers(ctx, space) -> dict[str, str]:
    """atproto-space headers of a fresh holder whose credential engram's own key for `space` signed."""
    holder = PrivateKey.generate("ES256")
    token = mint_for_space(ctx.keyring, space.uri, holder.public_key.did_key)
    return sign_space_request(holder, token, ctx.settings.service_did)
