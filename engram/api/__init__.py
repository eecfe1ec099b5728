"""XRPC handlers, one module per NSID; the module path mirrors the lexicon tree."""

from __future__ import annotations

from ..context import AppContext
from ..xrpc.server import XrpcServer
from .com.atproto.space import notify_space_deleted
from .garden.engram.admin import (
    configure_space,
    create_api_key,
    create_space,
    delete_space,
    import_memories,
    list_api_keys,
    list_spaces,
    reindex_space,
    revoke_api_key,
)
from .garden.engram import (
    describe_service,
    export_space,
    get_memory,
    get_memory_graph,
    get_space_status,
    list_memories,
    search_memories,
    warm_space,
)

HANDLER_MODULES = (
    describe_service,
    export_space,
    get_memory,
    get_memory_graph,
    get_space_status,
    list_memories,
    notify_space_deleted,
    search_memories,
    warm_space,
    # garden.engram.admin.*: operator procedures, DID-signed (admin_auth.admin_signed)
    configure_space,
    create_api_key,
    create_space,
    delete_space,
    import_memories,
    list_api_keys,
    list_spaces,
    reindex_space,
    revoke_api_key,
)


def register_all(xrpc: XrpcServer, ctx: AppContext) -> None:
    for module in HANDLER_MODULES:
        module.register(xrpc, ctx)
