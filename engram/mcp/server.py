"""The MCP server: engram's memory tools, one resource template and one prompt, on the official `mcp` SDK.

Transports only differ in how they find the caller's `McpAccess`: stdio has one per process (`engram mcp`),
streamable HTTP one per request (`http.py` puts it in the ASGI scope after checking the bearer). Tool
failures are the service layer's domain errors, shown to the model as `Name: message` and nothing else;
their text never contains the query, so the SDK's own failure log (INFO) stays free of it. An unknown
tool or prompt and a missing resource are protocol errors with the spec's codes (docs/mcp.md#errors).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations
from mcp_types.jsonrpc import INVALID_PARAMS
from pydantic import Field, ValidationError

from .. import __version__
from ..errors import EngramError, InvalidInput, NotFound
from ..service.budget import spending
from . import schemas
from .access import McpAccess
from .arguments import argument_errors, close_schema
from .operations import MAX_PAGE, MAX_RECALL, MemoryOperations, Narrowing
from .prompt import USAGE_PROMPT
from .refusal import tool_error_text

if TYPE_CHECKING:
    from .remote import RemoteOperations

AccessProvider = Callable[[Context], Awaitable[McpAccess]]

INSTRUCTIONS = (
    "engram is a long-term memory. Call recall before answering anything that may depend on what the user "
    "told you earlier; call remember for durable facts, preferences and decisions worth keeping."
)

# The SDK logs at DEBUG every message it receives, tool arguments included; a query must never reach a
# log (docs/mcp.md). Its loggers get engram's level as it is when a server is built, but never below INFO,
# so lowering the root logger later (ENGRAM_LOG_LEVEL=debug, a test's log capture) cannot open them.
SDK_LOGGERS = ("mcp", "sse_starlette")


def hold_sdk_logs_at_info() -> None:
    level = max(logging.INFO, logging.getLogger().getEffectiveLevel())
    for name in SDK_LOGGERS:
        logging.getLogger(name).setLevel(level)


RESOURCE_NOT_FOUND = -32002  # the spec's code for a resource that does not exist (server/resources)

READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)


class EngramMCPServer(MCPServer):
    """The SDK's server with the spec's error codes and engram's error texts (docs/mcp.md#errors)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.argument_validators: dict[str, Any] = {}  # tool name -> its closed schema's validator

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")  # a protocol error, not a tool result
        wrong = argument_errors(self.argument_validators[name], arguments)
        if wrong is not None:
            raise ToolError(f"InvalidRequest: {wrong}")
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a crash: the SDK's generic text, never the exception's
        except ToolError as err:
            # The SDK prefixes `Error executing tool <name>: ` and, for arguments that fail the schema,
            # pydantic's full report (with a help link); the model gets `Name: message` only.
            cause = err.__cause__
            if isinstance(cause, ValidationError):
                raise ToolError(f"InvalidRequest: {validation_message(cause)}") from None
            if isinstance(cause, ToolError):
                raise ToolError(str(cause)) from None
            raise

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Context | None = None
    ) -> Any:
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name}")
        declared = {argument.name for argument in prompt.arguments or ()}
        unknown = sorted(set(arguments or {}) - declared)
        if unknown:  # the SDK would fail to render it (code 0) and log the caller's values
            raise MCPError(
                INVALID_PARAMS, f"Invalid params: prompt {name} takes no argument {', '.join(unknown)}"
            )
        return await super().get_prompt(name, arguments, context)


def validation_message(err: ValidationError) -> str:
    """Each failing argument and pydantic's one-line reason; never the value sent (it is the caller's)."""
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc']) or 'arguments'}: {e['msg']}" for e in err.errors()
    )


SpaceArg = Annotated[
    str | None,
    Field(description="A space's id, name or at:// URI from list_spaces. Omit it for your default space."),
]
TagsArg = Annotated[
    list[str] | None, Field(description="Only memories carrying all of these tags.", max_length=16)
]
AuthorArg = Annotated[str | None, Field(description="Only memories written by this DID.")]
SinceArg = Annotated[
    str | None,
    Field(description="Only memories created at or after this time (ISO 8601, e.g. 2026-01-31T00:00:00Z)."),
]


def build_server(ops: MemoryOperations | RemoteOperations, access_of: AccessProvider) -> MCPServer:
    """The tools over `ops`: this engram's services (`MemoryOperations`) or a remote engram's /mcp."""
    hold_sdk_logs_at_info()
    server = EngramMCPServer("engram", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

    async def run(context: Context, work: Callable[[McpAccess], Awaitable[Any]]) -> Any:
        try:
            access = await access_of(context)
            # recall spends the caller's own text budget (docs/mcp.md#limits-for-agents)
            with spending(access.principal):
                return await work(access)
        except EngramError as err:
            raise ToolError(tool_error_text(err)) from None

    @server.tool(
        description=(
            "Save one memory: a self-contained fact, preference, decision or note, written so it makes "
            "sense when read alone months later. Remembering the same text again does not make a second "
            "copy: you get the existing memory's uri with duplicate=true (its tags and source become the "
            "ones given now)."
        ),
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def remember(
        text: Annotated[str, Field(description="The memory itself, in plain language.", max_length=30000)],
        context: Context,
        tags: Annotated[
            list[str] | None, Field(description="Short labels to filter by later.", max_length=16)
        ] = None,
        source: Annotated[
            str | None,
            Field(description="Where this came from (a URL, file, or conversation).", max_length=2000),
        ] = None,
        space: SpaceArg = None,
        supersedes: Annotated[
            str | None,
            Field(
                description="The uri of a memory this one updates or corrects (from recall): recall then "
                "ranks this one first and marks the old one superseded.",
                max_length=2000,
            ),
        ] = None,
    ) -> schemas.Remembered:
        return await run(context, lambda a: ops.remember(a, text, tags, source, space, supersedes))

    @server.tool(
        description=(
            "Search your memories by meaning (mode=vector), by meaning and exact words together "
            "(mode=hybrid, the default: best for names, ids and rare terms), or by words alone "
            "(mode=keyword). Searches all your spaces unless you name some; results from several spaces "
            "are merged by score. Each hit has its uri, text, tags, createdAt and similarity (cosine, 0-1)."
        ),
        annotations=READS,
    )
    async def recall(
        query: Annotated[
            str, Field(description="What you are looking for, in natural language.", max_length=1000)
        ],
        context: Context,
        space: SpaceArg = None,
        spaces: Annotated[list[str] | None, Field(description="Several spaces to search at once.")] = None,
        tags: TagsArg = None,
        author: AuthorArg = None,
        since: SinceArg = None,
        limit: Annotated[int, Field(description="How many hits at most.", ge=1, le=MAX_RECALL)] = 10,
        mode: Annotated[str, Field(description="vector, hybrid or keyword.")] = "hybrid",
        until: Annotated[
            str | None, Field(description="Only memories created at or before this time (ISO 8601).")
        ] = None,
        any_tags: Annotated[
            list[str] | None,
            Field(description="Only memories carrying at least one of these tags.", max_length=16),
        ] = None,
        exclude_tags: Annotated[
            list[str] | None,
            Field(description="Leave out memories carrying any of these tags.", max_length=16),
        ] = None,
        where: Annotated[
            dict[str, Any] | None,
            Field(
                description='Conditions on memories\' attrs, one per field: {"team": "apollo"}, '
                '{"team": {"prefix": "apo"}}, {"labels": {"in": ["a", "b"]}}, {"priority": {"gte": 2, "lte": 4}}, '
                '{"due": {"after": "2026-01-01T00:00:00Z", "before": "2026-02-01T00:00:00Z"}}.'
            ),
        ] = None,
        current: Annotated[
            bool, Field(description="Only current facts: leave out memories another memory supersedes.")
        ] = False,
        min_confidence: Annotated[
            float | None,
            Field(description="Leave out hits whose confidence (why.confidence) is lower.", ge=0, le=1),
        ] = None,
    ) -> schemas.Recalled:
        named = ([space] if space else []) + list(spaces or [])
        narrow = Narrowing(until, any_tags, exclude_tags, where, current, min_confidence)
        return await run(
            context, lambda a: ops.recall(a, query, named or None, tags, author, since, limit, mode, narrow)
        )

    @server.tool(
        description="Read one memory by its uri (an at:// URI from recall or list_memories).",
        annotations=READS,
    )
    async def get_memory(
        uri: Annotated[str, Field(description="The memory's at:// URI.")], context: Context
    ) -> schemas.MemoryView:
        return await run(context, lambda a: ops.get_memory(a, uri))

    @server.tool(
        description=(
            "List memories of one space, newest first, optionally filtered; pass the returned cursor to get "
            "the next page (cursor is null on the last page)."
        ),
        annotations=READS,
    )
    async def list_memories(
        context: Context,
        space: SpaceArg = None,
        tags: TagsArg = None,
        author: AuthorArg = None,
        since: SinceArg = None,
        cursor: Annotated[str | None, Field(description="From the previous page's answer.")] = None,
        limit: Annotated[int, Field(description="Page size.", ge=1, le=MAX_PAGE)] = 25,
    ) -> schemas.MemoryPage:
        return await run(context, lambda a: ops.list_memories(a, space, tags, author, since, cursor, limit))

    @server.tool(
        description=(
            "Delete one memory by its uri, for good. Only in spaces you may write; use it when the user asks "
            "you to forget something or a memory is wrong (then remember the corrected version)."
        ),
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )
    async def forget(
        uri: Annotated[str, Field(description="The memory's at:// URI.")], context: Context
    ) -> schemas.Forgotten:
        return await run(context, lambda a: ops.forget(a, uri))

    @server.tool(
        description=(
            "The spaces you can use: id, name, embedding model, number of memories, whether you may read and "
            "write each, and which one remember uses by default."
        ),
        annotations=READS,
    )
    async def list_spaces(context: Context) -> schemas.Spaces:
        return await run(context, ops.list_spaces)

    @server.resource(
        "at://{+path}",
        name="memory",
        mime_type="application/json",
        description="One memory, by its at:// URI (the same as get_memory).",
    )
    async def memory_resource(path: str, context: Context) -> dict[str, Any]:
        try:
            return await ops.memory_resource(await access_of(context), "at://" + path)
        except (NotFound, InvalidInput) as err:
            code = RESOURCE_NOT_FOUND if isinstance(err, NotFound) else INVALID_PARAMS
            raise MCPError(code, f"{err.name}: {err.message}", {"uri": "at://" + path}) from None
        except EngramError as err:
            raise ResourceError(f"{err.name}: {err.message}") from None

    @server.prompt(name="use_memory", description="How to use engram's memory tools well.")
    def use_memory() -> str:
        return USAGE_PROMPT

    for tool in server._tool_manager.list_tools():
        # the published schema is the contract (arguments.py)
        server.argument_validators[tool.name] = close_schema(tool.parameters)
    return server
