"""Sim's error envelope `{"success": false, "error": {"message"}}` with Sim's statuses (400 validation,
401 no or bad key, 403 missing scope, 404 "Memory not found", 409 conflict, 500 internal)."""

from __future__ import annotations

from aiohttp import web

from ...errors import EngramError
from ..errors import HTTP_STATUS_BY_KIND
from ..requests import json_response


def render_error(err: EngramError) -> web.Response:
    status = HTTP_STATUS_BY_KIND.get(err.kind, 500)
    body = {"success": False, "error": {"message": err.message}}
    return json_response(body, status, headers=err.headers or None)
