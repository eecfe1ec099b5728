"""Sim's error answers, with Sim's statuses (400 validation, 401 no or bad key, 403 missing scope, 404
"Memory not found", 500 internal): the envelope `{"success": false, "error": {"message"}}` the routes
write, and the shared request parser's `{"error": "Validation error", "details": [...]}` for what a
current-generation contract refuses (docs/compat.md "Sim")."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ...errors import EngramError, InvalidInput
from ..errors import HTTP_STATUS_BY_KIND
from ..requests import json_response


class ValidationFailed(InvalidInput):
    """A request a zod contract refuses upstream; `issues` in zod's shape (`{code, path, message}`;
    docs/compat.md#sim-memory-block)."""

    default_name = "ValidationError"

    def __init__(self, issues: list[dict[str, Any]]):
        super().__init__(issues[0]["message"])
        self.issues = issues


def render_error(err: EngramError) -> web.Response:
    status = HTTP_STATUS_BY_KIND.get(err.kind, 500)
    if isinstance(err, ValidationFailed):
        return json_response({"error": "Validation error", "details": err.issues}, status)
    body = {"success": False, "error": {"message": err.message}}
    return json_response(body, status, headers=err.headers or None)
