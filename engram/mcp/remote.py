"""`engram mcp --url`: the same tools on stdio, each forwarded to a remote engram's `/mcp` (docs/mcp.md).

For a local agent whose memories live on a server: the local process holds no data, only the API key it
sends as the bearer on every request, so the remote server applies exactly that key's rights. It has the
same method shapes as `MemoryOperations`, so `build_server` serves either; the access argument is unused
here, because the remote server derives it from the key.
"""

from __future__ import annotations

import json
from typing import Any

from mcp import Client
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from .access import McpAccess

NO_ACCESS = McpAccess({}, frozenset(), None, "remote")  # the remote server decides; nothing is decided here


class RemoteOperations:
    def __init__(self, client: Client):
        self.client = client

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        sent = {k: v for k, v in arguments.items() if v is not None}
        try:
            result = await self.client.call_tool(name, sent)
        except MCPError as exc:
            raise ToolError(f"RemoteError: the engram server refused the call ({exc})") from None
        if result.is_error:
            text = " ".join(getattr(part, "text", "") for part in result.content)
            raise ToolError(text.removeprefix(f"Error executing tool {name}: "))
        return result.structured_content or {}

    async def remember(self, _access, text, tags=None, source=None, space=None, supersedes=None):
        arguments = {"text": text, "tags": tags, "source": source, "space": space}
        if supersedes is not None:  # only when given: a remote engram from before it knows no such field
            arguments["supersedes"] = supersedes
        return await self.call("remember", arguments)

    async def recall(
        self, _access, query, spaces=None, tags=None, author=None, since=None, limit=10, mode="hybrid",
        narrow=None,
    ):  # fmt: skip
        arguments = {
            "query": query, "spaces": spaces, "tags": tags, "author": author, "since": since, "limit": limit,
            "mode": mode,
        }  # fmt: skip
        if narrow is not None:  # only what was given: a remote engram from before knows no such fields
            given = {
                "until": narrow.until, "any_tags": narrow.any_tags, "exclude_tags": narrow.exclude_tags,
                "where": narrow.where, "min_confidence": narrow.min_confidence,
            }  # fmt: skip
            arguments.update({k: v for k, v in given.items() if v is not None})
            if narrow.current:
                arguments["current"] = True
        return await self.call("recall", arguments)

    async def get_memory(self, _access, uri):
        return await self.call("get_memory", {"uri": uri})

    async def list_memories(
        self, _access, space=None, tags=None, author=None, since=None, cursor=None, limit=25
    ):
        return await self.call(
            "list_memories",
            {
                "space": space,
                "tags": tags,
                "author": author,
                "since": since,
                "cursor": cursor,
                "limit": limit,
            },
        )

    async def forget(self, _access, uri):
        return await self.call("forget", {"uri": uri})

    async def list_spaces(self, _access):
        return await self.call("list_spaces", {})

    async def memory_resource(self, _access, decoded_uri: str) -> dict[str, Any]:
        read = await self.client.read_resource(decoded_uri)  # the server's MCPError passes on as it came
        return json.loads(read.contents[0].text)
