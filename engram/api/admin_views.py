"""garden.engram.admin.defs views (spaceView, apiKeyView), shared by the admin handlers and the CLI's
`--json` output so both speak the same shapes."""

from __future__ import annotations

from ..service.config_json import config_view
from ..store import ApiKey, Space, SpaceStatus


def space_view(space: Space, status: SpaceStatus | None = None) -> dict:
    view: dict = {
        "uri": space.uri,
        "authority": space.authority,
        "name": space.skey,
        "kind": space.kind,
        "createdAt": space.created_at,
    }
    config = config_view(space)
    if config is not None:
        view["config"] = config
    if status is not None:
        skipped = sum(count for _, count in status.skipped)
        view["memories"] = status.memories
        view["indexed"] = max(status.memories - skipped, 0)
        view["skipped"] = skipped
        if space.config is not None and space.config.next is not None:
            view["buildingMemories"] = status.building_memories
    return view


def api_key_view(key: ApiKey) -> dict:
    view: dict = {
        "id": key.id,
        "space": key.space_uri,
        "scopes": sorted(key.scopes),
        "label": key.label,
        "createdAt": key.created_at,
    }
    if key.revoked_at is not None:
        view["revokedAt"] = key.revoked_at
    view["spaces"] = [{"id": short, "uri": uri} for short, uri in key.spaces.items()]
    return view
