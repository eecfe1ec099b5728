"""The OpenAPI 3.1 description of engram's Sim memory routes, both generations (served at
/compat/sim/openapi.json). A request with a `workspaceId` is the current generation; one without, the
first (`workflowId`) one."""

from __future__ import annotations

from typing import Any

from .messages import ROLES
from .translate import MAX_LIST_LIMIT

_MESSAGE = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {"role": {"enum": list(ROLES)}, "content": {}},
}
_DATA = {"oneOf": [{"type": "array", "items": _MESSAGE}, _MESSAGE]}
_ROW = {
    "type": "object",
    "required": ["id", "workflowId", "key", "type", "data", "createdAt", "updatedAt", "deletedAt"],
    "properties": {
        "id": {"type": "string"},
        "workflowId": {"type": "string"},
        "key": {"type": "string"},
        "type": {"const": "agent"},
        "data": {"type": "array", "items": _MESSAGE},
        "createdAt": {"type": "string"},
        "updatedAt": {"type": "string"},
        "deletedAt": {"type": "null"},
    },
}
_RECORD = {
    "type": "object",
    "required": ["conversationId", "data"],
    "properties": {"conversationId": {"type": "string"}, "data": _DATA},
}
_ERROR = {
    "oneOf": [
        {
            "type": "object",
            "required": ["success", "error"],
            "properties": {
                "success": {"const": False},
                "error": {
                    "type": "object",
                    "required": ["message"],
                    "properties": {"message": {"type": "string"}},
                },
            },
        },
        {  # the current generation's request parser
            "type": "object",
            "required": ["error"],
            "properties": {"error": {"type": "string"}, "details": {"type": "array"}},
        },
    ]
}


def _ok(data: dict) -> dict:
    return {
        "type": "object",
        "required": ["success", "data"],
        "properties": {"success": {"const": True}, "data": data},
    }


def _json(schema: dict, description: str) -> dict:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _errors(*statuses: str) -> dict:
    return {status: _json({"$ref": "#/components/schemas/Error"}, "failure") for status in statuses}


def _param(name: str, description: str, *, required: bool = False, schema: dict | None = None) -> dict:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema or {"type": "string", "minLength": 1},
    }


_WORKFLOW = _param("workflowId", "first generation: the conversation's workflow")
_WORKSPACE = _param("workspaceId", "current generation: the conversation's workspace")
_KEY = {
    "name": "key",
    "in": "path",
    "required": True,
    "description": "the conversation's key (Sim's `id` / `conversationId` tool parameter)",
    "schema": {"type": "string"},
}
_ROW_OR_RECORD = {"oneOf": [{"$ref": "#/components/schemas/Memory"}, {"$ref": "#/components/schemas/Record"}]}
_ADD_V1 = {
    "type": "object",
    "required": ["key", "type", "data", "workflowId"],
    "properties": {
        "key": {"type": "string", "minLength": 1},
        "type": {"const": "agent"},
        "data": _MESSAGE,
        "workflowId": {"type": "string", "minLength": 1},
    },
}
_ADD_CURRENT = {
    "type": "object",
    "required": ["key", "workspaceId", "data"],
    "properties": {
        "key": {"type": "string", "minLength": 1},
        "workspaceId": {"type": "string", "minLength": 1},
        "data": _DATA,
    },
}


def openapi() -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "engram: Sim memory block",
            "version": "2",
            "description": (
                "Sim's memory routes, both generations side by side: a request with a workspaceId is the "
                "current generation ({conversationId, data} answers), one without is the first (workflowId "
                "scoped, whole rows). Conversations live inside the API key's primary space, each message "
                "one engram memory. Unlike Sim, an API key is required."
            ),
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Memory": _ROW, "Record": _RECORD, "Error": _ERROR},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/memory": {
                "post": {
                    "operationId": "addMemory",
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"oneOf": [_ADD_V1, _ADD_CURRENT]}}},
                    },
                    "responses": {
                        "200": _json(_ok(_ROW_OR_RECORD), "appended (or, current generation, written)"),
                        "201": _json(_ok({"$ref": "#/components/schemas/Memory"}), "created"),
                        **_errors("400", "401", "403"),
                    },
                },
                "get": {
                    "operationId": "listMemories",
                    "parameters": [
                        _WORKFLOW,
                        _WORKSPACE,
                        _param("query", "a LIKE pattern matched against the keys (% and _ are wildcards)"),
                        _param("type", "first generation: only agent rows exist"),
                        _param(
                            "limit",
                            f"default 50; at most {MAX_LIST_LIMIT} are returned",
                            schema={"type": "integer", "minimum": 1, "default": 50},
                        ),
                    ],
                    "responses": {
                        "200": _json(
                            _ok(
                                {
                                    "type": "object",
                                    "properties": {"memories": {"type": "array", "items": _ROW_OR_RECORD}},
                                }
                            ),
                            "conversations, oldest first",
                        ),
                        **_errors("400", "401", "403"),
                    },
                },
                "delete": {
                    "operationId": "deleteMemories",
                    "parameters": [_WORKSPACE, _param("conversationId", "the conversation's key")],
                    "responses": {
                        "200": _json(
                            _ok(
                                {
                                    "type": "object",
                                    "required": ["message", "deletedCount"],
                                    "properties": {
                                        "message": {"type": "string"},
                                        "deletedCount": {"type": "integer"},
                                    },
                                }
                            ),
                            "deleted (current generation)",
                        ),
                        **_errors("400", "401", "403"),
                    },
                },
            },
            "/api/memory/{key}": {
                "get": {
                    "operationId": "getMemory",
                    "parameters": [_KEY, _WORKFLOW, _WORKSPACE],
                    "responses": {
                        "200": _json(
                            _ok({"oneOf": [*_ROW_OR_RECORD["oneOf"], {"type": "null"}]}),
                            "the conversation (current generation: null when there is none)",
                        ),
                        **_errors("400", "401", "403", "404"),
                    },
                },
                "delete": {
                    "operationId": "deleteMemory",
                    "parameters": [_KEY, _WORKFLOW, _WORKSPACE],
                    "responses": {
                        "200": _json(
                            _ok({"type": "object", "properties": {"message": {"type": "string"}}}), "deleted"
                        ),
                        **_errors("400", "401", "403", "404"),
                    },
                },
                "put": {
                    "operationId": "replaceMemory",
                    "parameters": [_KEY],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["data", "workspaceId"],
                                    "properties": {
                                        "data": _MESSAGE,
                                        "workspaceId": {"type": "string", "minLength": 1},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(_ok({"$ref": "#/components/schemas/Record"}), "replaced"),
                        **_errors("400", "401", "403", "404"),
                    },
                },
            },
        },
    }
