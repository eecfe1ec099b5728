"""Granting and revoking members of hosted spaces (`engram space grant|revoke|members` and the
garden.engram.admin member procedures). The credential exchange reads the same rows
(`engram/spacehost/credential_exchange.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..spacehost import member_writes
from ..store import hosted_writers as store_writers
from ..store import members as store_members
from ..store.members import Member

if TYPE_CHECKING:
    from ..auth.keyring import LocalKeyring
    from ..spacehost.revocations import Revocations
    from ..store.database import Store
    from ..sync.syncer import Syncer


class Members:
    def __init__(self, store: Store, keyring: LocalKeyring, revocations: Revocations):
        self.store = store
        self.keyring = keyring  # the authorities engram holds keys for
        self.revocations = revocations
        # The server's syncer, attached once it runs (Services.attach_syncer): it drops the repos of members
        # who lose write access (docs/space-host.md#members-repos).
        self.syncer: Syncer | None = None

    async def grant(self, space_uri: str, did: str, *, write: bool = False) -> Member:
        """Read access, plus write access with ``write``; granting again replaces the previous access."""
        member = await self.put(space_uri, did, read=True, write=write)
        assert member is not None
        return member

    async def put(self, space_uri: str, did: str, *, read: bool, write: bool) -> Member | None:
        """com.atproto.simplespace.putMember: set both flags; neither flag is no access at all, so the member is
        revoked (None)."""
        if not (read or write):
            await self.revoke(space_uri, did)
            return None

        def put_it(conn) -> Member:
            if not write:  # its writes are no longer tracked (docs/space-host.md#members-repos)
                store_writers.forget_writer(conn, space_uri, did)
            return store_members.put_member(conn, space_uri, did, read=read, write=write)

        member = await self.store.write(put_it)
        if not write:
            member_writes.writer_left(self.syncer, space_uri)
        if not read:  # no longer a reader: the credentials it holds go too
            await self.revocations.revoke_member(space_uri, did, keep_member=True)
        return member

    async def revoke(self, space_uri: str, did: str) -> bool:
        """Remove a member and revoke the credentials engram issued to it (docs/space-host.md#revoking-credentials)."""
        return await self.revocations.revoke_member(space_uri, did)

    async def list_members(self, space_uri: str) -> list[Member]:
        return await self.store.read(store_members.list_members, space_uri)

    async def get(self, space_uri: str, did: str) -> Member | None:
        return await self.store.read(store_members.get_member, space_uri, did)

    async def page(
        self, space_uri: str, *, cursor: str | None, limit: int
    ) -> tuple[list[Member], str | None]:
        """One page of members in DID order, and the cursor of the next page (None at the end)."""
        rows = await self.store.read(store_members.page_members, space_uri, after=cursor, limit=limit)
        return rows, rows[-1].did if len(rows) == limit else None

    async def spaces_of(
        self, did: str, *, authority: str | None = None, cursor: str | None, limit: int
    ) -> tuple[list[tuple[str, bool]], str | None]:
        """com.atproto.space.listSpaces: the live hosted spaces ``did`` owns or is a member of."""
        rows = await self.store.read(
            store_members.spaces_of,
            did,
            authorities=self.keyring.dids(),
            authority=authority,
            after=cursor,
            limit=limit,
        )
        return rows, rows[-1][0] if len(rows) == limit else None

    async def known(self, did: str) -> bool:
        """Whether ``did`` may have spaces here: an authority engram holds a key for, or a member somewhere."""
        return self.keyring.private_key(did) is not None or await self.store.read(
            store_members.is_member_anywhere, did
        )
