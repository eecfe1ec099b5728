"""Sim memory block, first generation (`workflowId`-scoped; the tools `memory_add(id, role, content)`,
`memory_get(id)`, `memory_get_all()`, `memory_delete(id)`): request bodies -> values, conversations -> Sim's
rows (pure functions).

A Sim row is one conversation `{id, workflowId, key, type, data: [message...], createdAt, updatedAt,
deletedAt}`; engram stores each message as one memory (engram/store/conversations.py), so the row is
reassembled from them. Checks, their order and their messages are the routes' own, JavaScript truthiness
included (docs/compat.md "Sim").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...errors import InvalidInput
from ...store import Memory
from ...store.attrs import nul_path
from ...store.conversations import Scope
from ...store.prepared_memories import MAX_TEXT_BYTES
from .messages import ROLES, Message, conversation_data, too_long
from .params import js_string, parse_int, truthy

DEFAULT_LIST_LIMIT = 50
MAX_LIST_LIMIT = 1000  # upstream has no cap; engram clamps to this (docs/compat.md)
MAX_KEY_CHARS = 512
SCOPE = "workflowId"


@dataclass(frozen=True)
class AddRequest:
    scope: Scope
    key: str
    message: Message


def refuse_nul(value: Any, where: str | None = None) -> None:
    """400 for a U+0000 anywhere in `value` (PostgreSQL, Sim's store, refuses it), naming its path."""
    path = nul_path(value)
    if path is not None:
        name = ".".join(str(p) for p in ([where] if where else []) + path)
        raise InvalidInput(f"{name}: Value cannot contain a NUL character (U+0000)", "NulCharacter")


def _text_value(value: Any, what: str) -> str:
    """A truthy key or workflowId as the text it becomes in Sim's text columns."""
    text = js_string(value)
    if text is None:
        raise InvalidInput(f"{what} must be a string")
    if len(text) > MAX_KEY_CHARS:
        raise InvalidInput(f"{what} must be at most {MAX_KEY_CHARS} characters")
    return text


def parse_add(body: dict[str, Any]) -> AddRequest:
    """POST /api/memory `{key, type: "agent", data: {role, content}, workflowId}`: the route's checks in its
    order (`if (!key)`, `if (!type || type !== 'agent')`, `if (!data)`, `if (!workflowId)`, then role and
    content), each a 400 with the route's message."""
    key, data, workflow_id = body.get("key"), body.get("data"), body.get("workflowId")
    if not truthy(key):
        raise InvalidInput("Memory key is required")
    if body.get("type") != "agent":
        raise InvalidInput('Memory type must be "agent"')
    if not truthy(data):
        raise InvalidInput("Memory data is required")
    if not truthy(workflow_id):
        raise InvalidInput("workflowId is required")
    if not isinstance(data, dict) or not truthy(data.get("role")) or not truthy(data.get("content")):
        raise InvalidInput("Agent memory requires role and content")
    if data["role"] not in ROLES:
        raise InvalidInput("Agent role must be user, assistant, or system")
    refuse_nul(body)
    message = Message.of(data)
    if too_long(message):
        raise InvalidInput(
            f"Memory data (its content and other fields) must be at most {MAX_TEXT_BYTES} UTF-8 bytes"
        )
    return AddRequest(
        Scope(SCOPE, _text_value(workflow_id, "workflowId")), _text_value(key, "Memory key"), message
    )


def list_scope(value: str | None) -> Scope:
    """GET /api/memory's `workflowId` (`if (!workflowId)`: "workflowId parameter is required")."""
    if not value:
        raise InvalidInput("workflowId parameter is required")
    refuse_nul(value, "workflowId")
    return Scope(SCOPE, _text_value(value, "workflowId"))


def item_scope(value: str | None) -> Scope:
    """GET/DELETE /api/memory/{id}'s `workflowId`, checked by zod (`z.string().uuid()`) there: missing is
    "workflowId: Expected string, received null"; empty fails the UUID check. Any other non-empty value is
    accepted, as POST and the list accept it (docs/compat.md "Sim": engram does not require a UUID)."""
    if value is None:
        raise InvalidInput("workflowId: Expected string, received null")
    if value == "":
        raise InvalidInput("workflowId: Invalid workflow ID format")
    refuse_nul(value, "workflowId")
    return Scope(SCOPE, _text_value(value, "workflowId"))


def parse_limit(value: str | None) -> int:
    """`Number.parseInt(limit || '50')`, clamped to MAX_LIST_LIMIT (NaN or a negative number, which make
    PostgreSQL fail upstream, are a 400 here; docs/compat.md#sim-memory-block)."""
    limit = parse_int(value or str(DEFAULT_LIST_LIMIT))
    if limit is None or limit < 0:
        raise InvalidInput("limit must be a non-negative integer")
    return min(limit, MAX_LIST_LIMIT)


def memory_row(messages: list[Memory]) -> dict[str, Any]:
    """The Sim row of a conversation (messages oldest first, at least one)."""
    first, last = messages[0], messages[-1]
    return {
        "id": first.attrs["simId"],
        "workflowId": str(first.attrs[SCOPE]),
        "key": first.attrs["conversationKey"],
        "type": "agent",
        "data": conversation_data(messages),
        "createdAt": first.created_at,
        "updatedAt": last.created_at,
        "deletedAt": None,
    }


def ok(data: Any) -> dict[str, Any]:
    return {"success": True, "data": data}
