"""Sim Studio memory block routes (`/api/memory`), conversations as memories (docs/compat.md)."""

from __future__ import annotations

from ..shim import Shim
from .errors import render_error
from .openapi import openapi
from .routes import add_routes

SHIM = Shim("sim", ("/api/memory",), add_routes, render_error, openapi)
