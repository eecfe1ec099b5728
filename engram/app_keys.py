"""Typed application state keys (aiohttp AppKey), all in one place."""

from __future__ import annotations

from aiohttp import web

from .context import AppContext
from .xrpc.server import XrpcServer

context_key = web.AppKey("context", AppContext)
xrpc_key = web.AppKey("xrpc", XrpcServer)
