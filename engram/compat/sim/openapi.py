"""The OpenAPI 3.1 description of engram's Sim memory routes (served at /compat/sim/openapi.json)."""

from __future__ import annotations

from typing import Any

from .translate import MAX_LIST_LIMIT, ROLES

_MESSAGE = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {"role": {"enum": list(ROLES)}, "content": {"type": "string"}},
}
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
_ERROR = {
    "type": "object",
    "required": ["success", "error"],
    "properties": {
        "success": {"const": False},
        "error": {"type": "object", "required": ["message"], "properties": {"message": {"type": "string"}}},
    },
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


_WORKFLOW = {
    "name": "workflowId",
    "in": "query",
    "required": True,
    "schema": {"type": "string", "minLength": 1},
}
_ID = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}


def openapi() -> dict[str, Any]:
    row = {"$ref": "#/components/schemas/Memory"}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "engram: Sim memory block",
            "version": "1",
            "description": (
                "Sim's memory routes (v1 shapes). Conversations are scoped by workflowId inside the API key's "
                "primary space; each message is one engram memory (attrs workflowId, conversationKey, sequence, "
                "role). Unlike Sim v1, an API key is required."
            ),
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Memory": _ROW, "Error": _ERROR},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/memory": {
                "post": {
                    "operationId": "addMemory",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["key", "type", "data", "workflowId"],
                                    "properties": {
                                        "key": {"type": "string", "minLength": 1},
                                        "type": {"const": "agent"},
                                        "data": _MESSAGE,
                                        "workflowId": {"type": "string", "minLength": 1},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": _json(_ok(row), "appended to an existing memory"),
                        "201": _json(_ok(row), "created"),
                        **_errors("400", "401", "403", "409"),
                    },
                },
                "get": {
                    "operationId": "listMemories",
                    "parameters": [
                        _WORKFLOW,
                        {"name": "query", "in": "query", "schema": {"type": "string"}},
                        {"name": "type", "in": "query", "schema": {"type": "string"}},
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": MAX_LIST_LIMIT,
                                "default": 50,
                            },
                        },
                    ],
                    "responses": {
                        "200": _json(
                            _ok(
                                {
                                    "type": "object",
                                    "properties": {"memories": {"type": "array", "items": row}},
                                }
                            ),
                            "conversations, oldest first",
                        ),
                        **_errors("400", "401", "403"),
                    },
                },
            },
            "/api/memory/{id}": {
                "get": {
                    "operationId": "getMemory",
                    "parameters": [_ID, _WORKFLOW],
                    "responses": {
                        "200": _json(_ok(row), "the memory"),
                        **_errors("400", "401", "403", "404"),
                    },
                },
                "delete": {
                    "operationId": "deleteMemory",
                    "parameters": [_ID, _WORKFLOW],
                    "responses": {
                        "200": _json(
                            _ok({"type": "object", "properties": {"message": {"type": "string"}}}), "deleted"
                        ),
                        **_errors("400", "401", "403", "404"),
                    },
                },
            },
        },
    }
