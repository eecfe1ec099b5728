"""MCP over stdio (`engram mcp`): the SDK's stdio transport, with an answer for every line it cannot take.

Why: the SDK's stdio reader turns a line that is not a JSON-RPC message (not JSON, a batch, `jsonrpc`
"1.0") into an exception on its read stream, which the server logs and drops, and it reads a request whose
id is an object as a notification (its `id` ignored): either way the host that sent it gets nothing and
waits for its timeout. Such a line is answered with `-32700 Parse error` or `-32600 Invalid Request`
(docs/mcp.md#errors). So each line is checked first with the envelope rules of the HTTP transport
(envelope.py); a refused one is answered here and never reaches the SDK.
"""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator

import anyio
import pydantic
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError

from .envelope import INVALID_REQUEST, EnvelopeError, envelope_error, read_posted

PARSE_ERROR = -32700


def error_message(wrong: EnvelopeError) -> SessionMessage:
    return SessionMessage(
        JSONRPCError(jsonrpc="2.0", id=wrong.id, error=ErrorData(code=wrong.code, message=wrong.message))
    )


def unreadable(exc: Exception) -> EnvelopeError:
    """What to answer for a line the SDK could not read (never the line's content)."""
    not_json = isinstance(exc, pydantic.ValidationError) and any(
        e["type"] == "json_invalid" for e in exc.errors(include_url=False, include_input=False)
    )
    if not_json:
        return EnvelopeError(PARSE_ERROR, "Parse error: the line is not JSON")
    return EnvelopeError(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message MCP accepts")


class CheckedLines:
    """stdin's lines, less the ones the envelope rules refuse (their answers go to `refused`)."""

    def __init__(self, lines: anyio.AsyncFile[str], refused: MemoryObjectSendStream[EnvelopeError]):
        self._lines, self._refused = lines, refused

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async with self._refused:
            async for line in self._lines:
                if not line.strip():
                    continue  # a blank line between messages is nothing to answer
                wrong = envelope_error(read_posted(line.encode("utf-8", "replace")))
                if wrong is not None:
                    await self._refused.send(wrong)
                    continue
                yield line


async def run_stdio(server: MCPServer) -> None:
    """`server.run_stdio_async()` with every line answered: the SDK's own loop over its low-level server."""
    lowlevel = server._lowlevel_server
    # a duplicate of fd 0, so closing this reader never closes the process's stdin
    stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(os.dup(0), "rb"), encoding="utf-8", errors="replace"))
    refused_send, refused_receive = anyio.create_memory_object_stream[EnvelopeError](16)
    async with stdin, stdio_server(stdin=CheckedLines(stdin, refused_send)) as (read_stream, write_stream):  # type: ignore[arg-type]
        readable_send, readable_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def sift() -> None:
            async with readable_send:
                async for item in read_stream:
                    if isinstance(item, Exception):
                        await write_stream.send(error_message(unreadable(item)))
                    else:
                        await readable_send.send(item)

        async def answer_refused() -> None:
            async with refused_receive:
                async for wrong in refused_receive:
                    await write_stream.send(error_message(wrong))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(sift)
            tasks.start_soon(answer_refused)
            # at stdin's end the three finish in turn: the refusals are answered, then the server's work
            await lowlevel.run(readable_receive, write_stream, lowlevel.create_initialization_options())
