"""com.atproto.space.getSpaceCredential: engram as the space host of its hosted spaces mints a credential
for a member who brings a delegation token from its own PDS (docs/space-host.md).

Order of checks (cheap and local first, then the network, then the store); the first five are the method's
auth hook (`engram/api/space_exchange_auth.py`), which hands over a `VerifiedExchange`:
1. the space is hosted here and engram holds its authority's key (else ``SpaceNotFound``), and is live
   (else ``SpaceDeleted``);
2. exactly one ``Authorization: Bearer`` field (else ``AuthRequired``);
3. the atproto-space signature over ``authorization`` verifies with its ``keyid``, a P-256 did:key
   (else ``BadSpaceSignature``): that key becomes the credential's ``cnf.kid``;
4. the delegation token (``engram/auth/delegation.py``; else ``InvalidDelegationToken``);
5. the client attestation, when one is sent (``engram/auth/client_attestation.py``; else
   ``InvalidClientAttestation``);
6. here: the member holds a read grant (the authority itself always does; else 403 ``UserNotAuthorized``).
   The grant is read on every exchange, so a revocation is honoured at the member's next exchange.

The credential lives ``ENGRAM_CREDENTIAL_TTL`` seconds (600 by default, at most 3600: the protocol's cap).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..auth.credential import mint_space_credential
from ..errors import InvalidInput, NotAllowed
from ..store import members as store_members
from ..store.models import Space

if TYPE_CHECKING:
    from ..auth.keyring import LocalKeyring
    from ..store.database import Store
    from .revocations import Revocations


@dataclass(frozen=True)
class VerifiedExchange:
    """What the auth hook established: the space, the delegating member and the key to bind."""

    space: Space
    member: str  # the delegating user's DID (the delegation token's iss)
    holder: str  # the holder key's did:key (cnf.kid)
    client_id: str | None  # the attested client, when an attestation was sent


@dataclass(frozen=True)
class IssuedCredential:
    credential: str
    member: str
    holder: str
    client_id: str | None


async def issue(
    store: Store, keyring: LocalKeyring, revocations: Revocations, exchange: VerifiedExchange, *, ttl: int
) -> IssuedCredential:
    """Step 6 and the minting: a credential for ``exchange``'s holder key, living ``ttl`` seconds."""
    space, member = exchange.space, exchange.member
    signing_key = keyring.private_key(space.authority)
    if signing_key is None:  # the hook checked it; a key removed since is the same answer
        raise InvalidInput(f"this host does not host the space {space.uri}", "SpaceNotFound")
    if member != space.authority:
        grant = await store.read(store_members.get_member, space.uri, member)
        if grant is None or not grant.read:
            raise NotAllowed(f"{member} is not a member of {space.uri}", "UserNotAuthorized")
    credential = mint_space_credential(
        signing_key,
        issuer=space.authority,
        space=space.uri,
        holder_did_key=exchange.holder,
        ttl=ttl,
    )
    if (
        member != space.authority
    ):  # so revoking the member can name it (docs/space-host.md#revoking-credentials)
        await revocations.record_issued(space.uri, member, credential)
    return IssuedCredential(credential, member, exchange.holder, exchange.client_id)
