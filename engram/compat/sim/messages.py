"""A Sim message as engram stores it: one memory per message (pure functions, both generations).

Sim keeps a conversation's `data` as a JSON array of message objects and stores each object as sent:
`role` and `content` are checked, any other field rides along, and `content` may be any truthy JSON value
(the routes test `!data.content`). engram's memory text is the content (its JSON when it is not a
string); the message object itself is kept in attrs only when it is more than `{role, content: str}`,
so the answer gives back exactly what was sent (docs/compat.md "Sim").
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...errors import InvalidInput
from ...store import Memory
from ...store.attrs import MAX_ATTRS_DEPTH, depth_exceeds
from ...store.conversations import Scope
from ...store.prepared_memories import MAX_TEXT_BYTES

ROLES = ("user", "assistant", "system")


@dataclass(frozen=True)
class Message:
    role: str
    content: Any
    extra: dict[str, Any] = field(default_factory=dict)  # the object's other fields, kept as sent

    @classmethod
    def of(cls, obj: dict[str, Any]) -> Message:
        return cls(
            obj["role"], obj["content"], {k: v for k, v in obj.items() if k not in ("role", "content")}
        )

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return orjson.dumps(self.content).decode()

    def as_json(self) -> dict[str, Any]:
        return {"role": self.role, "content": self.content, **self.extra}

    @property
    def plain(self) -> bool:
        return isinstance(self.content, str) and not self.extra


def too_long(message: Message) -> bool:
    """Whether the message is over MAX_TEXT_BYTES: its content (the memory's text) and the other fields
    it carries (kept in attrs), together. A content nested deeper than attrs may be (store/attrs.py) is
    refused here, before its text is serialised: orjson serialises at most 254 levels."""
    if depth_exceeds(message.as_json(), MAX_ATTRS_DEPTH - 1):  # kept at attrs.message, one level down
        raise InvalidInput(f"Message content may be nested at most {MAX_ATTRS_DEPTH - 2} levels deep")
    size = len(message.text.encode("utf-8"))
    if message.extra:
        size += len(orjson.dumps(message.extra))
    return size > MAX_TEXT_BYTES


def new_sim_id() -> str:
    return "mem_" + uuid.uuid4().hex  # Sim's own row ids: `mem_${randomUUID without dashes}`


def message_attrs(
    scope: Scope, key: str, sim_id: str, sequence: int, message: Message, *, single: bool = False
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "shim": "sim",
        scope.attr: scope.value,
        "conversationKey": key,
        "sequence": sequence,
        "role": message.role,
        "simId": sim_id,
    }
    if not message.plain:
        attrs["message"] = message.as_json()
    if single:
        attrs["dataShape"] = "object"  # PUT stored `data` as one object, not an array (current generation)
    return attrs


def message_json(memory: Memory) -> dict[str, Any]:
    attrs = memory.attrs or {}
    kept = attrs.get("message")
    if isinstance(kept, dict) and "role" in kept and "content" in kept:
        return kept
    role = attrs.get("role")
    # An imported message may lack a valid role; Sim's readers expect one of ROLES.
    return {"role": role if role in ROLES else "user", "content": memory.text}


def conversation_data(messages: list[Memory]) -> list[dict[str, Any]] | dict[str, Any]:
    """A conversation's `data`: its message array, or the one object a PUT stored."""
    if len(messages) == 1 and (messages[0].attrs or {}).get("dataShape") == "object":
        return message_json(messages[0])
    return [message_json(m) for m in messages]
