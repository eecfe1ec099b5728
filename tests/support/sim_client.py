"""A client that calls /api/memory exactly as Sim's memory tools do, one class per generation: the same
URLs (`encodeURIComponent` for path segments, `URLSearchParams` for queries), bodies and headers, and
answers read the way each tool's `transformResponse` reads them. Written from simstudioai/sim's
`apps/sim/tools/memory/{add,get,get_all,delete}.ts` (docs/compat.md "Sim" names the commits).

The only addition is the engram API key: Sim's routes trust the session, engram's need a bearer key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode


def encode_uri_component(value: str) -> str:
    """JavaScript's encodeURIComponent: everything but A-Z a-z 0-9 - _ . ! ~ * ' ( ) is escaped."""
    return quote(value, safe="-_.!~*'()")


@dataclass
class ToolResult:
    success: bool
    output: dict[str, Any]
    error: str | None = None
    status: int = 200


@dataclass
class _Tools:
    http: Any  # aiohttp test client
    token: str

    def headers(self) -> dict[str, str]:
        return {"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"}

    async def _send(self, method: str, url: str, body: Any = None) -> tuple[int, Any]:
        kwargs: dict[str, Any] = {"headers": self.headers()}
        if body is not None:
            kwargs["json"] = body
        response = await self.http.request(method, url, **kwargs)
        return response.status, await response.json()

    @staticmethod
    def _failure(status: int, payload: Any) -> ToolResult:
        """Sim's executor on a non-2xx answer: the tool fails with the answer's error message."""
        error = payload.get("error") if isinstance(payload, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        return ToolResult(False, {}, message, status)


@dataclass
class FirstGenerationTools(_Tools):
    """The `workflowId` generation (the tools' state at simstudioai/sim a8a693f1, the parent of 02d9fedf)."""

    workflow_id: str = ""

    async def add(self, id: str, role: str, content: Any) -> ToolResult:
        body = {
            "key": id,
            "type": "agent",
            "workflowId": self.workflow_id,
            "data": {"role": role, "content": content},
        }
        status, payload = await self._send("POST", "/api/memory", body)
        if status >= 300:
            return self._failure(status, payload)
        data = payload.get("data") or payload
        memories = data["data"] if isinstance(data["data"], list) else [data["data"]]
        return ToolResult(True, {"memories": memories}, status=status)

    def _item_url(self, id: str) -> str:
        return f"/api/memory/{encode_uri_component(id)}?workflowId={encode_uri_component(self.workflow_id)}"

    async def get(self, id: str) -> ToolResult:
        status, payload = await self._send("GET", self._item_url(id))
        if status >= 300:
            return self._failure(status, payload)
        data = payload.get("data") or payload
        return ToolResult(True, {"memories": data["data"], "message": "Memory retrieved successfully"})

    async def get_all(self) -> ToolResult:
        status, payload = await self._send(
            "GET", f"/api/memory?workflowId={encode_uri_component(self.workflow_id)}"
        )
        if status >= 300:
            return self._failure(status, payload)
        data = payload.get("data") or payload
        raw = data.get("memories") or data or []
        memories = [{"key": m["key"], "type": m["type"], "data": m["data"]} for m in raw]
        return ToolResult(True, {"memories": memories, "message": "Memories retrieved successfully"})

    async def delete(self, id: str) -> ToolResult:
        status, payload = await self._send("DELETE", self._item_url(id))
        if status >= 300:
            return self._failure(status, payload)
        return ToolResult(True, {"message": "Memory deleted successfully."})


@dataclass
class CurrentTools(_Tools):
    """The `workspaceId` generation (the tools at simstudioai/sim 0b232eb8, HEAD when read)."""

    workspace_id: str = ""

    async def add(self, role: str, content: Any, conversation_id: str | None = None, id: str | None = None):
        key = conversation_id or id
        body = {"key": key, "workspaceId": self.workspace_id, "data": {"role": role, "content": content}}
        status, payload = await self._send("POST", "/api/memory", body)
        if status >= 300:
            return self._failure(status, payload)
        data = payload.get("data") or payload
        memories = data["data"] if isinstance(data["data"], list) else [data["data"]]
        return ToolResult(True, {"memories": memories})

    async def get(self, conversation_id: str) -> ToolResult:
        # new URL(`/api/memory/${encodeURIComponent(id)}`) with searchParams.set('workspaceId', ...)
        url = f"/api/memory/{encode_uri_component(conversation_id)}?" + urlencode(
            {"workspaceId": self.workspace_id}
        )
        status, payload = await self._send("GET", url)
        if status >= 300:
            return self._failure(status, payload)
        memory = payload.get("data")
        if not memory:
            return ToolResult(True, {"memories": [], "message": "No memories found"})
        return ToolResult(True, {"memories": [memory], "message": "Found 1 memory"})

    async def get_all(self) -> ToolResult:
        status, payload = await self._send(
            "GET", f"/api/memory?workspaceId={encode_uri_component(self.workspace_id)}"
        )
        if status >= 300:
            return self._failure(status, payload)
        data = payload.get("data") or payload
        memories = data.get("memories") or data or []
        if not isinstance(memories, list) or not memories:
            return ToolResult(True, {"memories": [], "message": "No memories found"})
        return ToolResult(True, {"memories": memories, "message": f"Found {len(memories)} memories"})

    async def delete(self, conversation_id: str) -> ToolResult:
        url = "/api/memory?" + urlencode(
            {"workspaceId": self.workspace_id, "conversationId": conversation_id}
        )
        status, payload = await self._send("DELETE", url)
        if status >= 300:
            return self._failure(status, payload)
        data = payload.get("data") or payload
        return ToolResult(
            payload.get("success") is not False,
            {"message": data.get("message") or "Memories deleted successfully"},
        )
