"""Granting and revoking members of hosted spaces (`engram space grant|revoke|members` and the
garden.engram.admin member procedures). The credential exchange reads the same rows
(`engram/service/space_credentials.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store import members as store_members
from ..store.members import Member

if TYPE_CHECKING:
    from ..context import AppContext


async def grant(ctx: AppContext, space_uri: str, did: str, *, write: bool = False) -> Member:
    """Read access, plus write access with ``write``; granting again replaces the previous access."""
    return await ctx.store.write(store_members.put_member, space_uri, did, read=True, write=write)


async def revoke(ctx: AppContext, space_uri: str, did: str) -> bool:
    return await ctx.store.write(store_members.remove_member, space_uri, did)


async def list_members(ctx: AppContext, space_uri: str) -> list[Member]:
    return await ctx.store.read(store_members.list_members, space_uri)


async def get(ctx: AppContext, space_uri: str, did: str) -> Member | None:
    return await ctx.store.read(store_members.get_member, space_uri, did)
