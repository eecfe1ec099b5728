"""Mounting the Memory Bank shim into the main app (its routes and, later, its OAuth server)."""

from __future__ import annotations

from aiohttp import web

from ...context import AppContext
from .routes import install_memorybank


def mount_memorybank(app: web.Application, ctx: AppContext) -> None:
    install_memorybank(app, ctx)
