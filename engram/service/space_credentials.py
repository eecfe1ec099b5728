"""com.atproto.space.getSpaceCredential: engram as the space host of its hosted spaces mints a credential
for a member who brings a delegation token from its own PDS (docs/space-host.md).

Order of checks (cheap and local first, then the network, then the store):
1. the space is hosted here and engram holds its authority's key (else ``SpaceNotFound``), and is live
   (else ``SpaceDeleted``);
2. exactly one ``Authorization: Bearer`` field (else ``AuthRequired``);
3. the atproto-space signature over ``authorization`` verifies with its ``keyid``, a P-256 did:key
   (else ``BadSpaceSignature``): that key becomes the credential's ``cnf.kid``;
4. the delegation token (``engram/auth/delegation.py``; else ``InvalidDelegationToken``);
5. the client attestation, when one is sent (``engram/auth/client_attestation.py``; else
   ``InvalidClientAttestation``);
6. the member holds a read grant (the authority itself always does; else 403 ``UserNotAuthorized``).
   The grant is read on every exchange, so a revocation is honoured at the member's next exchange.

The credential lives ``ENGRAM_CREDENTIAL_TTL`` seconds (600 by default, at most 3600: the protocol's cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from multidict import CIMultiDict, CIMultiDictProxy

from ..auth.credential import mint_space_credential
from ..auth.space_signature import verify_exchange_signature
from ..errors import InvalidInput, NotAllowed, NotAuthenticated
from ..store import members as store_members

if TYPE_CHECKING:
    from ..context import AppContext


@dataclass(frozen=True)
class IssuedCredential:
    credential: str
    member: str  # the delegating user's DID
    holder: str  # the holder key's did:key (cnf.kid)
    client_id: str | None  # the attested client, when an attestation was sent


async def exchange(
    ctx: AppContext,
    space_uri: str,
    headers: CIMultiDictProxy[str] | CIMultiDict[str],
    client_attestation: str | None = None,
) -> IssuedCredential:
    space = await ctx.services.spaces.find(space_uri)
    signing_key = ctx.keyring.private_key(space.authority) if space is not None else None
    if space is None or space.kind != "hosted" or signing_key is None:
        raise InvalidInput(f"this host does not host the space {space_uri}", "SpaceNotFound")
    if space.deleted:
        raise InvalidInput(f"the space {space_uri} was deleted", "SpaceDeleted")
    authorization = headers.getall("Authorization", [])
    if len(authorization) != 1:
        raise NotAuthenticated("exactly one Authorization: Bearer <delegation token> field is required")
    holder = verify_exchange_signature(headers)
    delegation = await ctx.space_host.delegations.verify(authorization[0], space_uri, space.authority)
    client_id = None
    if client_attestation is not None:
        client_id = await ctx.space_host.attestations.verify(client_attestation, space.authority)
    member = delegation.iss
    if member != space.authority:
        grant = await ctx.store.read(store_members.get_member, space_uri, member)
        if grant is None or not grant.read:
            raise NotAllowed(f"{member} is not a member of {space_uri}", "UserNotAuthorized")
    credential = mint_space_credential(
        signing_key,
        issuer=space.authority,
        space=space_uri,
        holder_did_key=holder.did_key,
        ttl=ctx.settings.credential_ttl,
    )
    if (
        member != space.authority
    ):  # so revoking the member can name it (docs/space-host.md#revoking-credentials)
        await ctx.services.revocations.record_issued(space_uri, member, credential)
    return IssuedCredential(credential, member, holder.did_key, client_id)
