"""Sim's error envelope `{"success": false, "error": {"message"}}` with Sim's statuses (400 validation,
401 no or bad key, 403 missing scope, 404 "Memory not found", 409 conflict, 500 internal)."""

from __future__ import annotations

from aiohttp import web

from ...errors import EngramError
from ..requests import json_response

_STATUS = {
    "invalid": 400,
    "auth": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "conflict": 409,
    "too_large": 413,
    "rate_limited": 429,
    "unavailable": 503,
}


def render_error(err: EngramError) -> web.Response:
    status = _STATUS.get(err.kind, 500)
    body = {"success": False, "error": {"message": err.message}}
    return json_response(body, status, headers=err.headers or None)
