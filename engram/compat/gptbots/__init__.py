"""GPTBots "Vector Similarity Matching" (`POST /v1/vector/match`) over the key's spaces (docs/compat.md)."""

from __future__ import annotations

from ..shim import Shim
from .errors import render_error
from .openapi import openapi
from .routes import add_routes

SHIM = Shim("gptbots", ("/v1/vector",), add_routes, render_error, openapi)
