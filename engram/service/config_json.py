"""The lexicon-shaped JSON of a space's model and config (garden.engram.defs#model, #spaceConfig).

Used by the XRPC views and by the export manifest, so both describe a config the same way."""

from __future__ import annotations

from ..store import ModelSpec, Space


def model_view(spec: ModelSpec) -> dict:
    return {"model": spec.model, "modelDigest": spec.digest, "dims": spec.dims}


def config_view(space: Space) -> dict | None:
    config = space.config
    if config is None:
        return None
    view = model_view(config.active)
    if config.document_prefix:
        view["documentPrefix"] = config.document_prefix
    if config.query_prefix:
        view["queryPrefix"] = config.query_prefix
    if config.next is not None:
        view["next"] = model_view(config.next)
    if config.updated_at:
        view["createdAt"] = config.updated_at
    return view
