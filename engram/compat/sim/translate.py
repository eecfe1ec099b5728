"""Sim memory block (v1): request bodies -> values, conversations -> Sim's rows (pure functions).

A Sim memory row is one conversation `{id, workflowId, key, type, data: [{role, content}...], createdAt,
updatedAt, deletedAt}`; engram stores each message as one memory (engram/store/conversations.py), so the
row is reassembled from them. Validation order and messages are Sim's own (docs/compat.md "Sim").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidInput
from ...store import Memory

ROLES = ("user", "assistant", "system")
DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 1000
MAX_KEY_CHARS = 512


@dataclass(frozen=True)
class AddRequest:
    workflow_id: str
    key: str
    role: str
    content: str


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_add(body: dict[str, Any]) -> AddRequest:
    key = _text(body.get("key"))
    if key is None:
        raise InvalidInput("Memory key is required")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"Memory key must be at most {MAX_KEY_CHARS} characters")
    if body.get("type") != "agent":
        raise InvalidInput('Memory type must be "agent"')
    data = body.get("data")
    if not data:
        raise InvalidInput("Memory data is required")
    workflow_id = require_workflow(body.get("workflowId"))
    if not isinstance(data, dict) or _text(data.get("role")) is None or _text(data.get("content")) is None:
        raise InvalidInput("Agent memory requires role and content")
    if data["role"] not in ROLES:
        raise InvalidInput("Agent role must be user, assistant, or system")
    return AddRequest(workflow_id, key, data["role"], data["content"])


def require_workflow(value: Any) -> str:
    workflow_id = _text(value)
    if workflow_id is None:
        raise InvalidInput("workflowId is required")
    if len(workflow_id) > MAX_KEY_CHARS:
        raise InvalidInput(f"workflowId must be at most {MAX_KEY_CHARS} characters")
    return workflow_id


def parse_limit(value: str | None) -> int:
    if value is None or value == "":
        return DEFAULT_LIST_LIMIT
    try:
        limit = int(value)
    except ValueError:
        raise InvalidInput("limit must be a positive integer") from None
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidInput(f"limit must be in 1..{MAX_LIST_LIMIT}")
    return limit


def new_memory_id() -> str:
    return "mem_" + uuid.uuid4().hex


def message_attrs(request: AddRequest, sim_id: str, sequence: int) -> dict[str, Any]:
    return {
        "shim": "sim",
        "workflowId": request.workflow_id,
        "conversationKey": request.key,
        "sequence": sequence,
        "role": request.role,
        "simId": sim_id,
    }


def memory_row(messages: list[Memory]) -> dict[str, Any]:
    """The Sim row of a conversation (messages oldest first, at least one)."""
    first, last = messages[0], messages[-1]
    return {
        "id": first.attrs["simId"],
        "workflowId": first.attrs["workflowId"],
        "key": first.attrs["conversationKey"],
        "type": "agent",
        "data": [{"role": m.attrs["role"], "content": m.text} for m in messages],
        "createdAt": first.created_at,
        "updatedAt": last.created_at,
        "deletedAt": None,
    }


def ok(data: Any) -> dict[str, Any]:
    return {"success": True, "data": data}


# What the memory block's tools hand a workflow, built from the HTTP answers (Sim's tools/memory/*.ts).
def tool_add_output(response: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "output": {"memories": response["data"]["data"]}}


def tool_get_output(response: dict[str, Any]) -> dict[str, Any]:
    memories = response["data"]["data"]
    return {"success": True, "output": {"memories": memories, "message": "Memory retrieved successfully"}}


def tool_get_all_output(response: dict[str, Any]) -> dict[str, Any]:
    rows = response["data"]["memories"]
    memories = [{"key": r["key"], "type": r["type"], "data": r["data"]} for r in rows]
    return {"success": True, "output": {"memories": memories, "message": "Memories retrieved successfully"}}


def tool_delete_output(response: dict[str, Any]) -> dict[str, Any]:
    return {"success": True, "output": {"message": "Memory deleted successfully."}}


def tool_error_output(response: dict[str, Any]) -> dict[str, Any]:
    return {"success": False, "output": {}, "error": response["error"]["message"]}
