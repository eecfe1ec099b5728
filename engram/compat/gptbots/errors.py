"""GPTBots error bodies: `{"code": int, "message": str}` with GPTBots' codes, never the XRPC envelope.

GPTBots documents the codes but not the HTTP statuses; engram's choice (docs/compat.md):
400 + 40000 invalid parameter, 400 + 40332 more than 10 data_ids, 401 + 40127 authentication failed,
403 + 40127 key lacks the read scope, 404 + 20059 the key's space (agent) was deleted, 404/405/413 +
40000 for an unknown path, wrong verb or oversized body, 429 + 40000 rate limited, 503 + 50000 retry
later, 500 + 50000 internal error.
"""

from __future__ import annotations

from aiohttp import web

from ...errors import EngramError
from ..requests import json_response

_BY_KIND = {
    "invalid": (400, 40000),
    "auth": (401, 40127),
    "forbidden": (403, 40127),
    "not_found": (404, 40000),
    "method_not_allowed": (405, 40000),
    "conflict": (409, 40000),
    "too_large": (413, 40000),
    "rate_limited": (429, 40000),
    "unavailable": (503, 50000),
}


def render_error(err: EngramError) -> web.Response:
    status, code = _BY_KIND.get(err.kind, (500, 50000))
    if err.name == "TooManyDocuments":
        code = 40332
    elif err.name == "SpaceDeleted":
        code = 20059
    return json_response({"code": code, "message": err.message}, status, headers=err.headers or None)
