"""XRPC handlers, one module per NSID; the module path mirrors the lexicon tree.

Each module exports `register(xrpc, ctx)`, which declares its auth mode and handler. A lexicon method whose
module is not listed here answers 501 MethodNotImplemented (and the meta test in tests/app pins that list).
"""

from __future__ import annotations

import importlib

from ..context import AppContext
from ..xrpc.server import XrpcServer

HANDLER_MODULES = (
    "garden.engram.describe_service",
    "garden.engram.export_space",
    "garden.engram.get_memory",
    "garden.engram.get_memory_graph",
    "garden.engram.get_space_status",
    "garden.engram.list_memories",
    "garden.engram.search_memories",
    "garden.engram.recall_memories",
    "garden.engram.warm_space",
    "com.atproto.space.notify_space_deleted",
    "com.atproto.space.notify_credential_revoked",
    "com.atproto.space.get_space_credential",
    # the authority's repo of hosted spaces, and the space-host writer list (docs/space-host.md)
    "com.atproto.space.get_record",
    "com.atproto.space.list_records",
    "com.atproto.space.get_latest_commit",
    "com.atproto.space.list_repo_ops",
    "com.atproto.space.get_repo",
    "com.atproto.space.list_repos",
    "com.atproto.space.register_notify",
    "com.atproto.space.unregister_notify",
    "com.atproto.space.notify_write",
    # the authority manages its hosted spaces the standard way (docs/space-host.md#managing-members)
    "com.atproto.space.list_spaces",
    "com.atproto.simplespace.create_space",
    "com.atproto.simplespace.put_member",
    "com.atproto.simplespace.remove_member",
    "com.atproto.simplespace.list_members",
    "com.atproto.simplespace.add_member",
    "com.atproto.simplespace.get_space",
    "com.atproto.simplespace.update_space",
    "com.atproto.simplespace.delete_space",
    # garden.engram.admin.*: operator procedures, DID-signed (admin_auth.admin_signed)
    "garden.engram.admin.add_synced_space",
    "garden.engram.admin.configure_space",
    "garden.engram.admin.create_api_key",
    "garden.engram.admin.create_space",
    "garden.engram.admin.delete_space",
    "garden.engram.admin.import_memories",
    # documents in (docs/documents.md): the remote admin's and the console's upload
    "garden.engram.admin.ingest_document",
    "garden.engram.admin.delete_document",
    "garden.engram.admin.list_documents",
    "garden.engram.admin.get_document",
    "garden.engram.admin.list_api_keys",
    "garden.engram.admin.list_spaces",
    "garden.engram.admin.reindex_space",
    "garden.engram.admin.revoke_api_key",
    # hosted spaces as AT Protocol spaces: members (docs/space-host.md)
    "garden.engram.admin.grant_member",
    "garden.engram.admin.list_members",
    "garden.engram.admin.revoke_member",
)


def register_all(xrpc: XrpcServer, ctx: AppContext) -> None:
    for name in HANDLER_MODULES:
        importlib.import_module(f"{__name__}.{name}").register(xrpc, ctx)
