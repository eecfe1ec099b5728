"""Granting and revoking members of hosted spaces (`engram space grant|revoke|members` and the
garden.engram.admin member procedures). The credential exchange reads the same rows
(`engram/spacehost/credential_exchange.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..spacehost import member_writes, revocations
from ..store import hosted_writers as store_writers
from ..store import members as store_members
from ..store.members import Member

if TYPE_CHECKING:
    from ..context import AppContext


async def grant(ctx: AppContext, space_uri: str, did: str, *, write: bool = False) -> Member:
    """Read access, plus write access with ``write``; granting again replaces the previous access."""
    member = await put(ctx, space_uri, did, read=True, write=write)
    assert member is not None
    return member


async def put(ctx: AppContext, space_uri: str, did: str, *, read: bool, write: bool) -> Member | None:
    """com.atproto.simplespace.putMember: set both flags; neither flag is no access at all, so the member is
    revoked (None)."""
    if not (read or write):
        await revoke(ctx, space_uri, did)
        return None

    def put_it(conn) -> Member:
        if not write:  # its writes are no longer tracked (docs/space-host.md#members-repos)
            store_writers.forget_writer(conn, space_uri, did)
        return store_members.put_member(conn, space_uri, did, read=read, write=write)

    member = await ctx.store.write(put_it)
    if not write:
        member_writes.writer_left(ctx, space_uri)
    if not read:  # no longer a reader: the credentials it holds go too
        await revocations.revoke_member(ctx, space_uri, did, keep_member=True)
    return member


async def revoke(ctx: AppContext, space_uri: str, did: str) -> bool:
    """Remove a member and revoke the credentials engram issued to it (docs/space-host.md#revoking-credentials)."""
    return await revocations.revoke_member(ctx, space_uri, did)


async def list_members(ctx: AppContext, space_uri: str) -> list[Member]:
    return await ctx.store.read(store_members.list_members, space_uri)


async def get(ctx: AppContext, space_uri: str, did: str) -> Member | None:
    return await ctx.store.read(store_members.get_member, space_uri, did)


async def page(
    ctx: AppContext, space_uri: str, *, cursor: str | None, limit: int
) -> tuple[list[Member], str | None]:
    """One page of members in DID order, and the cursor of the next page (None at the end)."""
    rows = await ctx.store.read(store_members.page_members, space_uri, after=cursor, limit=limit)
    return rows, rows[-1].did if len(rows) == limit else None


async def spaces_of(
    ctx: AppContext, did: str, *, authority: str | None = None, cursor: str | None, limit: int
) -> tuple[list[tuple[str, bool]], str | None]:
    """com.atproto.space.listSpaces: the live hosted spaces ``did`` owns or is a member of."""
    rows = await ctx.store.read(
        store_members.spaces_of,
        did,
        authorities=ctx.keyring.dids(),
        authority=authority,
        after=cursor,
        limit=limit,
    )
    return rows, rows[-1][0] if len(rows) == limit else None


async def known(ctx: AppContext, did: str) -> bool:
    """Whether ``did`` may have spaces here: an authority engram holds a key for, or a member somewhere."""
    return ctx.keyring.private_key(did) is not None or await ctx.store.read(
        store_members.is_member_anywhere, did
    )
