"""Sim memory block, current generation (`workspaceId`-scoped; the tools send `{key, workspaceId, data}`,
list with `?workspaceId=`, get and delete by conversation id, and the routes answer `{conversationId,
data}`): request values -> values, conversations -> answers (pure functions).

Where upstream validates with a zod contract (its memory contract, cited in docs/compat.md), a failure is answered in
its own shape: `400 {"error": "Validation error", "details": [issue...]}` from the shared request parser,
or the envelope with the route's joined `path: message` text on the `[id]` routes. The checks after the
contract are the route's own, in its order and with its messages (docs/compat.md "Sim").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidInput
from ...store import Memory
from ...store.attrs import nul_path
from ...store.conversations import Scope
from ...store.prepared_memories import MAX_TEXT_BYTES
from .errors import ValidationFailed
from .messages import ROLES, Message, conversation_data, too_long
from .params import js_number, js_string, truthy

SCOPE = "workspaceId"
MAX_MESSAGES = 100  # messages one POST may carry (upstream has no cap; each is embedded; docs/compat.md)
MAX_KEY_CHARS = 512
MAX_LIST_LIMIT = 1000  # upstream has no cap; engram clamps to this (docs/compat.md)
NUL_MESSAGE = "Value cannot contain a NUL character (U+0000)"


def _type_name(value: Any) -> str:
    """What zod 4 calls a value's type in "Invalid input: expected X, received Y"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def type_issue(path: list[str | int], expected: str, value: Any, *, missing: bool = False) -> dict[str, Any]:
    received = "undefined" if missing else _type_name(value)
    return {
        "expected": expected,
        "code": "invalid_type",
        "path": path,
        "message": f"Invalid input: expected {expected}, received {received}",
    }


def nul_issue(path: list[str | int]) -> dict[str, Any]:
    return {"code": "custom", "path": path, "message": NUL_MESSAGE}


def joined(issues: list[dict[str, Any]]) -> str:
    """The `[id]` routes' rendering of zod issues: `path: message`, joined by ", "."""
    return ", ".join(f"{'.'.join(str(p) for p in i['path'])}: {i['message']}" for i in issues)


def _checked_text(value: str, what: str) -> str:
    if len(value) > MAX_KEY_CHARS:
        raise InvalidInput(f"{what} must be at most {MAX_KEY_CHARS} characters")
    return value


@dataclass(frozen=True)
class AddRequest:
    scope: Scope
    key: str
    messages: list[Message]


def parse_add(body: dict[str, Any]) -> AddRequest:
    """POST /api/memory `{key, workspaceId, data}`; `data` one message object or an array of them."""
    issues = [
        type_issue([name], "string", body[name])
        for name in ("key", "workspaceId")
        if name in body and not isinstance(body[name], str)
    ]
    if issues:
        raise ValidationFailed(issues)
    nul = nul_path(body)
    if nul is not None:
        raise ValidationFailed([nul_issue(nul)])
    key, data, workspace_id = body.get("key"), body.get("data"), body.get("workspaceId")
    if not key:
        raise InvalidInput("Memory key is required")
    if not truthy(data):
        raise InvalidInput("Memory data is required")
    if not workspace_id:
        raise InvalidInput("workspaceId is required")
    items = data if isinstance(data, list) else [data]
    if not items:  # upstream would store an empty conversation, which engram cannot (docs/compat.md)
        raise InvalidInput("Memory requires messages with role and content")
    if len(items) > MAX_MESSAGES:
        raise InvalidInput(f"Memory data may hold at most {MAX_MESSAGES} messages per request")
    messages = []
    for item in items:
        role = item.get("role") if isinstance(item, dict) else None
        if role not in ROLES or not truthy(item.get("content")):
            invalid_role = truthy(role) and js_string(role) not in ROLES
            raise InvalidInput(
                "Message role must be user, assistant, or system"
                if invalid_role
                else "Memory requires messages with role and content"
            )
        message = Message.of(item)
        if too_long(message):
            raise InvalidInput(
                f"A message (its content and other fields) must be at most {MAX_TEXT_BYTES} UTF-8 bytes"
            )
        messages.append(message)
    return AddRequest(
        Scope(SCOPE, _checked_text(workspace_id, "workspaceId")), _checked_text(key, "Memory key"), messages
    )


def query_text(query: dict[str, list[str]], name: str) -> str | None:
    """A query parameter as the shared parser reads it (a repeated one is an array, which `z.string()`
    refuses); NUL is refused like any other value's."""
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationFailed([type_issue([name], "string", values)])
    if nul_path(values[0]) is not None:
        raise ValidationFailed([nul_issue([name])])
    return values[0]


def parse_limit(value: str | None) -> int:
    """`z.coerce.number().int().min(1).default(50)`, clamped to MAX_LIST_LIMIT."""
    if value is None:
        return 50
    number = js_number(value)
    if math.isnan(number) or math.isinf(number):
        received = "NaN" if math.isnan(number) else "Infinity"
        message = f"Invalid input: expected number, received {received}"
        raise ValidationFailed(
            [{"expected": "number", "code": "invalid_type", "path": ["limit"], "message": message}]
        )
    if not float(number).is_integer():
        raise ValidationFailed(
            [
                {
                    "expected": "int",
                    "format": "safeint",
                    "code": "invalid_type",
                    "path": ["limit"],
                    "message": "Invalid input: expected int, received number",
                }
            ]
        )
    if number < 1:
        raise ValidationFailed(
            [
                {
                    "origin": "number",
                    "code": "too_small",
                    "minimum": 1,
                    "inclusive": True,
                    "path": ["limit"],
                    "message": "Too small: expected number to be >=1",
                }
            ]
        )
    return int(min(number, MAX_LIST_LIMIT))


def item_scope(value: str | None, *, body: bool = False) -> Scope:
    """The `[id]` routes' `workspaceId` (`z.string().uuid()` upstream). Empty fails the UUID check there;
    any other non-empty value is accepted, as POST and the list accept it (docs/compat.md)."""
    if value is None:
        issue = type_issue(["workspaceId"], "string", None, missing=True)
        raise InvalidInput(_prefix(body) + joined([issue]))
    if not isinstance(value, str):
        raise InvalidInput(_prefix(body) + joined([type_issue(["workspaceId"], "string", value)]))
    if value == "":
        raise InvalidInput(_prefix(body) + "workspaceId: Invalid workspace ID format")
    if nul_path(value) is not None:
        raise InvalidInput(_prefix(body) + joined([nul_issue(["workspaceId"])]))
    return Scope(SCOPE, _checked_text(value, "workspaceId"))


def _prefix(body: bool) -> str:
    return "Invalid request body: " if body else ""


def parse_put(body: Any) -> tuple[Scope, Any]:
    """PUT /api/memory/{id} `{data, workspaceId}`: the contract's checks (`data` an object, `workspaceId`
    a non-empty string). The agent-message check comes after the existence check, as upstream
    (docs/compat.md#current-generation)."""
    if not isinstance(body, dict):
        raise InvalidInput("Invalid request body: " + joined([type_issue([], "object", body)]))
    issues = []
    if not isinstance(body.get("data"), dict):
        issues.append({"code": "invalid_union", "path": ["data"], "message": "Invalid memory data structure"})
    if issues:
        raise InvalidInput("Invalid request body: " + joined(issues))
    scope = item_scope(body.get("workspaceId"), body=True)
    nul = nul_path(body)
    if nul is not None:
        raise InvalidInput("Invalid request body: " + joined([nul_issue(nul)]))
    return scope, body["data"]


def agent_message(data: dict[str, Any]) -> Message:
    """`agentMemoryDataSchema`: role one of ROLES, content a non-empty string; extra fields are dropped."""
    issues = []
    role, content = data.get("role"), data.get("content")
    if role not in ROLES:
        issues.append({"path": ["role"], "message": "Role must be user, assistant, or system"})
    if not isinstance(content, str):
        missing = "content" not in data
        issues.append(type_issue(["content"], "string", content, missing=missing))
    elif not content:
        issues.append({"path": ["content"], "message": "Content is required"})
    if issues:
        raise InvalidInput("Invalid agent memory data: " + joined(issues))
    message = Message(role, content)
    if too_long(message):
        raise InvalidInput(f"Invalid agent memory data: content must be at most {MAX_TEXT_BYTES} UTF-8 bytes")
    return message


def record(messages: list[Memory]) -> dict[str, Any]:
    """A conversation as the current routes answer it: `{conversationId, data}`."""
    return {"conversationId": messages[0].attrs["conversationKey"], "data": conversation_data(messages)}


def delete_answer(count: int) -> dict[str, Any]:
    message = f"Successfully deleted {count} memories" if count else "No memories found matching the criteria"
    return {"message": message, "deletedCount": count}
