"""Rebuilding a space's indexes from the store (`engram reindex`, garden.engram.admin.reindexSpace)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..store import ModelSpec
from .search import require_model

if TYPE_CHECKING:
    from ..search.manager import IndexManager
    from .spaces import SpaceService


async def reindex_space(spaces: SpaceService, index: IndexManager, space_uri: str) -> list[ModelSpec]:
    """Rebuild and save the index of the active model, and of the next one during a model change; returns
    the models rebuilt. `NoModel` when the space has none."""
    space = await spaces.require(space_uri)
    specs = [require_model(space)]
    if space.config.next is not None:
        specs.append(space.config.next)
    for spec in specs:
        await index.rebuild(space_uri, spec.key, spec.dims)
    return specs
