"""An over-budget `recall` refused before the SDK's transport is built (docs/mcp.md#limits-for-agents).

A key flooding `recall` past its text budget gets `RateLimitExceeded` on nearly every call. Through the
SDK each refusal costs a whole per-request transport (Starlette, a task group, memory streams, the
inbound ladder, the tool's dispatch) for an answer that is known the moment the key's bucket is seen to
be empty, and that CPU is taken from every other tenant's calls on the same cores. So `http.py` asks
here first: when the caller's key has no token left and the request is a `tools/call` of `recall` that
would embed its query, the answer is made here, through the SDK's own result serializer, and is the
same body the SDK's path would send (tests/mcp/test_mcp_http.py compares them byte for byte). Anything else, or anything this does not recognise,
goes to the SDK as before, which then decides (and refuses or answers) exactly as it always did.

A 2026-revision call (self-contained, no session) is answered as the SDK's 2026 entry answers a tool
call that emits nothing: one `application/json` body. A 2025-revision call, once `http.py` has found its
session live, is answered as the SDK's stateless transport answers it: one `message` event of an event
stream (framed by sse-starlette, as the SDK's is).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import orjson
from mcp.server.connection import Connection
from mcp.server.runner import ServerRunner
from mcp.server.streamable_http import check_accept_headers
from mcp.shared.inbound import InboundModernRoute, classify_inbound_request, find_duplicated_routing_header
from mcp_types import (
    CallToolResult,
    JSONRPCRequest,
    JSONRPCResponse,
    TextContent,
    jsonrpc_message_adapter,
    methods,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from sse_starlette import ServerSentEvent

from ..errors import EngramError, RateLimited
from .access import McpAccess

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from ..service.text_query import TextQueries

EMBEDDING_MODES = ("vector", "hybrid")  # keyword recalls embed nothing and spend no text budget
RECALL_DEFAULT_MODE = "hybrid"  # the recall tool's default (server.py)
SKIPPED_HEADER_PREFIXES = ("mcp-param-",)  # validated by the SDK against the tool's schema: its path


# The headers of the SDK's event-stream answer (its streamable HTTP transport's and sse-starlette's own;
# docs/mcp.md#limits-for-agents)
SSE_HEADERS = {
    "Cache-Control": "no-cache, no-transform",
    "Connection": "keep-alive",
    "X-Accel-Buffering": "no",
}


@dataclass(frozen=True)
class Refused:
    body: bytes
    content_type: str
    headers: dict[str, str]


def tool_error_text(err: EngramError) -> str:
    """What the model reads for a failed tool call: `Name: message`, nothing else (docs/mcp.md#errors)."""
    return f"{err.name}: {err.message}"


class RecallRefusals:
    def __init__(self, server: MCPServer, text: TextQueries):
        self.server = server
        self._text = text
        self._results: dict[tuple[str, str], dict[str, Any]] = {}

    def over_budget(self, access: McpAccess) -> RateLimited | None:
        """The refusal the caller's next text search would get, or None (one bucket look: every call but
        a flood's stops here)."""
        return self._text.key_refusal(access.principal)

    def answer(
        self, refusal: RateLimited, access: McpAccess, headers: Mapping[str, str], body: bytes
    ) -> Refused | None:
        """The answer refusing this request with `refusal`, or None: the SDK serves it."""
        lowered = {name.lower(): value for name, value in headers.items()}
        if any(name.startswith(SKIPPED_HEADER_PREFIXES) for name in lowered):
            return None
        if find_duplicated_routing_header(headers.items()) is not None:
            return None
        # The SDK's check reads only its argument's `.headers`: given a stand-in holding just those.
        has_json, has_sse = check_accept_headers(SimpleNamespace(headers=lowered))  # type: ignore[arg-type]
        if not (has_json and has_sse):  # the SDK's 406
            return None
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        version = lowered.get("mcp-protocol-version")
        if version in HANDSHAKE_PROTOCOL_VERSIONS:
            return self._answer_2025(refusal, access, lowered, message, version)
        route = self._recall_route(message, lowered)
        if route is None or not self._would_embed(access, message["params"]["arguments"]):
            return None
        reply = self._reply(route.protocol_version, message["id"], tool_error_text(refusal))
        text = json.dumps(
            reply.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")
        )
        return Refused(text.encode(), "application/json", {})

    def _answer_2025(
        self, refusal: RateLimited, access: McpAccess, headers: Mapping[str, str], raw: Any, version: str
    ) -> Refused | None:
        """A 2025-revision call in a live session: the SDK's stateless transport checks the content type,
        the JSON-RPC message and the method's params, then streams the answer as one event."""
        content_type = headers.get("content-type", "").split(";")[0].split(",")
        if "application/json" not in (part.strip() for part in content_type):  # the SDK's 415
            return None
        try:
            message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
        except ValidationError:
            return None
        if not isinstance(message, JSONRPCRequest) or message.method != "tools/call":
            return None
        params = message.params or {}
        if params.get("name") != "recall" or not isinstance(params.get("arguments"), dict):
            return None
        try:
            methods.validate_client_request("tools/call", version, params)
        except (KeyError, ValidationError):
            return None
        if not self._would_embed(access, params["arguments"]):
            return None
        reply = self._reply(version, message.id, tool_error_text(refusal))
        event = ServerSentEvent(
            data=reply.model_dump_json(by_alias=True, exclude_unset=True), event="message"
        )
        return Refused(event.encode(), "text/event-stream", dict(SSE_HEADERS))

    @staticmethod
    def _recall_route(message: Any, headers: Mapping[str, str]) -> InboundModernRoute | None:
        """The SDK's own verdict on the envelope, for a well-formed `tools/call` of `recall` only."""
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or message.get("method") != "tools/call"
        ):
            return None
        if not isinstance(message.get("id"), int | str) or isinstance(message["id"], bool):
            return None
        params = message.get("params")
        if not isinstance(params, dict) or params.get("name") != "recall" or "requestState" in params:
            return None
        if not isinstance(params.get("arguments"), dict):
            return None
        verdict = classify_inbound_request(message, headers=headers)
        if not isinstance(verdict, InboundModernRoute):
            return None
        try:  # the surface check the SDK's dispatch makes before any handler runs
            methods.validate_client_request("tools/call", verdict.protocol_version, params)
        except (KeyError, ValidationError):
            return None
        return verdict

    def _would_embed(self, access: McpAccess, arguments: dict[str, Any]) -> bool:
        """Whether the SDK's path would reach the key's bucket: arguments the tool accepts (its own
        validation), a mode that embeds, a query with words, and spaces the caller may read; a call failing
        any of these gets that failure from the SDK instead, as before."""
        tool = self.server._tool_manager.get_tool("recall")
        if tool is None:
            return False
        try:
            args = tool.fn_metadata.validate_arguments(arguments)
        except ValidationError:
            return False
        if args.get("mode", RECALL_DEFAULT_MODE) not in EMBEDDING_MODES or not str(args["query"]).strip():
            return False
        named = ([args["space"]] if args.get("space") else []) + list(args.get("spaces") or [])
        try:
            access.read_spaces(named or None)
        except EngramError:
            return False
        return True

    def _reply(self, version: str, request_id: int | str, text: str) -> JSONRPCResponse:
        """The SDK's reply to a tool call that failed with `text`: the tool result it builds
        (MCPServer._handle_call_tool), shaped for `version` by its serializer (ServerRunner._serialize:
        the per-version sieve and, for the 2026 revision, `resultType` and the `serverInfo` stamp); the callers write it as the SDK's two
        streamable HTTP transports do (docs/mcp.md#limits-for-agents)."""
        wire = self._results.get((version, text))
        if wire is None:  # the same few (version, text) pairs all along: shaped once each
            result = CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
            connection = Connection.from_envelope(version, None, None)
            runner = ServerRunner(self.server._lowlevel_server, connection, None)
            wire = self._results[(version, text)] = runner._serialize("tools/call", version, result)
        return JSONRPCResponse(jsonrpc="2.0", id=request_id, result=wire)
