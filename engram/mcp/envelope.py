"""The JSON-RPC envelope of a message posted to `/mcp` in a 2025 session, checked before the SDK sees it
(docs/mcp.md#errors).

Why here and not in the SDK: its streamable-HTTP transport answers a malformed envelope with `-32602`
and pydantic's whole report, the request's own content included, and accepts a request whose id is
null or an object without answering it at all (202). These are `-32600 Invalid Request`, and MCP's ids
are strings or integers, never null (docs/mcp.md#errors). A body that is not JSON at all is
left to the SDK, whose `-32700 Parse error` is right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import pydantic
from mcp_types import InitializeRequestParams

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class EnvelopeError:
    code: int
    message: str
    id: str | int | None = None  # the request's id, when it had a valid one


@dataclass(frozen=True)
class Posted:
    """What a POST body holds, as far as the session logic needs to know."""

    message: Any  # the parsed JSON (None when the body is not JSON: the SDK answers that)
    parsed: bool

    @property
    def is_initialize(self) -> bool:
        return isinstance(self.message, dict) and self.message.get("method") == "initialize"


def read_posted(body: bytes) -> Posted:
    try:
        return Posted(orjson.loads(body), True)
    except orjson.JSONDecodeError:
        return Posted(None, False)


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def envelope_error(posted: Posted) -> EnvelopeError | None:
    """Why the posted message is not a JSON-RPC request, notification or response MCP accepts; None when
    it is (or when the body is not JSON)."""
    if not posted.parsed:
        return None
    message = posted.message
    if isinstance(message, list):
        # JSON-RPC batches left MCP in 2025-06-18; engram's sessions do not take them (docs/mcp.md)
        return EnvelopeError(INVALID_REQUEST, "Invalid Request: batches are not supported")
    if not isinstance(message, dict):
        return EnvelopeError(INVALID_REQUEST, "Invalid Request: a JSON-RPC message is an object")
    has_id = "id" in message
    request_id = message.get("id") if has_id and _valid_id(message.get("id")) else None
    if message.get("jsonrpc") != "2.0":
        return EnvelopeError(INVALID_REQUEST, 'Invalid Request: jsonrpc must be "2.0"', request_id)
    if has_id and not _valid_id(message["id"]):
        return EnvelopeError(INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
    if "method" in message:
        if not isinstance(message["method"], str) or not message["method"]:
            return EnvelopeError(INVALID_REQUEST, "Invalid Request: method must be a string", request_id)
        if "params" in message and not isinstance(message["params"], dict):
            return EnvelopeError(INVALID_REQUEST, "Invalid Request: params must be an object", request_id)
        return None
    if not has_id or ("result" in message) == ("error" in message):
        return EnvelopeError(
            INVALID_REQUEST,
            "Invalid Request: neither a request (method) nor a response (id and result or error)",
        )
    return None


def initialize_error(posted: Posted) -> EnvelopeError | None:
    """Why an `initialize` request cannot open a session (its params are not InitializeRequestParams);
    checked before the session is opened, because the SDK reports it inside a 200 event stream."""
    message = posted.message
    request_id = message.get("id") if _valid_id(message.get("id")) else None
    if not _valid_id(message.get("id")):
        return EnvelopeError(INVALID_REQUEST, "Invalid Request: initialize is a request and needs an id")
    try:
        InitializeRequestParams.model_validate(message.get("params"))
    except pydantic.ValidationError as exc:
        names = sorted(
            {str(e["loc"][0]) for e in exc.errors(include_url=False, include_input=False) if e["loc"]}
        )
        missing = ", ".join(names) or "params"
        return EnvelopeError(
            INVALID_PARAMS, f"Invalid params: initialize needs a valid {missing}", request_id
        )
    return None
