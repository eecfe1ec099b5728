"""Revoking space credentials (docs/space-host.md#revoking-credentials).

As space host: every credential engram mints is recorded; revoking a member moves that member's live
credentials to the revoked set, which engram's own reads refuse from then on, and tells the syncers
registered for the space with `com.atproto.space.notifyCredentialRevoked {space, credentials: [jti]}`.
As syncer: a synced space's authority sends the same notification; engram refuses those credentials on
its reads of the space until they have expired, and drops its own held credential if it is one of them.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..auth.credential import MAX_LIFETIME
from ..auth.jws import parse_jws
from ..errors import NotAuthenticated
from ..identifiers import space_authority
from ..store import credentials as store_credentials
from ..store import hosted_writers as store_writers
from ..store import members as store_members
from . import member_writes

if TYPE_CHECKING:
    from ..store.database import Store
    from ..sync.syncer import Syncer
    from .write_notifier import WriteNotifier

# A notification names no expiry; the reference keeps a revoked jti at least this long (a credential lives
# at most MAX_LIFETIME, plus the verifiers' 5 s of skew and 5 s of margin).
REMEMBER_FOR = MAX_LIFETIME + 10


def _now_ms() -> int:
    return int(time.time() * 1000)


class Revocations:
    def __init__(self, store: Store, notifier: WriteNotifier | None):
        self.store = store
        self.notifier = notifier  # the server's; the CLI has none, and its revocation still holds for readers
        # The server's syncer, attached once it runs (it is built over the services: Services.attach_syncer);
        # it follows the members' repos and holds the credentials of the spaces engram syncs.
        self.syncer: Syncer | None = None

    async def record_issued(self, space_uri: str, member: str, credential: str) -> None:
        claims = parse_jws(credential).payload  # the one engram just signed
        await self.store.write(
            store_credentials.record_issued, space_uri, member, claims["jti"], claims["exp"] * 1000, _now_ms()
        )

    async def revoke_member(self, space_uri: str, member: str, *, keep_member: bool = False) -> bool:
        """Remove ``member`` from a hosted space (unless ``keep_member``: it keeps write access but may no
        longer read) and revoke its live credentials, in one transaction; then tell the space's registered
        syncers (from the server; the CLI has no notifier, and its revocation still holds for every reader of
        this store). False if the DID was not a member."""
        now = _now_ms()

        def revoke(conn) -> tuple[bool, list[str]]:
            removed = keep_member or store_members.remove_member(conn, space_uri, member)
            if not keep_member:  # nor are its writes tracked (docs/space-host.md#members-repos)
                store_writers.forget_writer(conn, space_uri, member)
            return removed, store_credentials.revoke_issued(conn, space_uri, member, now)

        removed, jtis = await self.store.write(revoke)
        if not keep_member:
            member_writes.writer_left(self.syncer, space_uri)
        authority = space_authority(space_uri)  # a hosted space's canonical URI always names one
        if jtis and self.notifier is not None and authority is not None:
            self.notifier.credentials_revoked(space_uri, authority, jtis)
        return removed

    async def honour(self, space_uri: str, jtis: list[str]) -> None:
        """A synced space's authority revoked these credentials (the server's syncer drops its own held
        credential if it is one of them)."""
        now = _now_ms()
        await self.store.write(store_credentials.add_revoked, space_uri, jtis, now + REMEMBER_FOR * 1000, now)
        if self.syncer is not None:
            self.syncer.credentials.forget_revoked(space_uri, jtis)

    async def refuse_revoked(self, space_uri: str, jti: str) -> None:
        """Every reader-authenticated request checks this, cached or not (a point read the change counter
        keeps current: engram/store/point_cache.py)."""
        if jti in await self.store.point_read(store_credentials.revoked_jtis, space_uri):
            raise NotAuthenticated("the space's authority revoked this credential", "CredentialRevoked")
