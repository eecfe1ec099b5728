"""Rebuilding a space's indexes from the store (`engram reindex`, garden.engram.admin.reindexSpace)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store import ModelSpec
from .search import require_model

if TYPE_CHECKING:
    from ..context import AppContext


async def reindex_space(ctx: AppContext, space_uri: str) -> list[ModelSpec]:
    """Rebuild and save the index of the active model, and of the next one during a model change; returns
    the models rebuilt. `NoModel` when the space has none."""
    space = await ctx.services.spaces.require(space_uri)
    specs = [require_model(space)]
    if space.config.next is not None:
        specs.append(space.config.next)
    for spec in specs:
        await ctx.index.rebuild(space_uri, spec.key, spec.dims)
    return specs
