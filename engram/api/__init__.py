"""XRPC handlers, one module per NSID; the module path mirrors the lexicon tree."""

from __future__ import annotations

from ..context import AppContext
from ..xrpc.server import XrpcServer
from .garden.engram import describe_service


def register_all(xrpc: XrpcServer, ctx: AppContext) -> None:
    for module in (describe_service,):
        module.register(xrpc, ctx)
