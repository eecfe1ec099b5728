"""The OpenAPI 3.1 description of engram's GPTBots vector match (served at /compat/gptbots/openapi.json)."""

from __future__ import annotations

from typing import Any

from .translate import MAX_DATA_IDS, MAX_TOP_K, RERANKERS

_NUMBER_OR_STRING = {"anyOf": [{"type": "number"}, {"type": "string", "pattern": r"^\s*-?[0-9.eE+-]+\s*$"}]}
# engram's documented extra fields on a match item (docs/compat.md "GPTBots vector match"): which memory
# it supersedes and which supersedes it, each with its basis (docs/internals.md#supersession).
_REPLACEMENT = {
    "type": "object",
    "required": ["uri", "basis"],
    "properties": {"uri": {"type": "string"}, "basis": {"enum": ["explicit", "heuristic"]}},
}
_IDS = {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "string"}}]}
_ERROR = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
}


def openapi() -> dict[str, Any]:
    errors = {
        status: {
            "description": text,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
        }
        for status, text in {
            "400": "40000 invalid parameter; 40332 more than 10 data_ids",
            "401": "40127 authentication failed (missing, unknown or revoked key)",
            "403": "40127 the key lacks the read scope",
            "404": "20059 the key's space (agent) was deleted",
            "429": "40000 rate limited (Retry-After)",
            "503": "50000 retry shortly",
        }.items()
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "engram: GPTBots vector similarity matching",
            "version": "1",
            "description": (
                "Knowledge bases (group_ids) are the API key's spaces, by the short ids `engram apikey list` "
                "shows. score is a relevance in [0, 1]: embedding_rate x cosine similarity (clipped to [0, 1]) "
                "+ (1 - embedding_rate) x BM25 relative to the best keyword match. No reranker model runs: "
                "rerank_version is accepted and the X-Engram-Reranker response header says `none`."
            ),
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": {"Error": _ERROR, "Replacement": _REPLACEMENT},
        },
        "security": [{"bearer": []}],
        "paths": {
            "/v1/vector/match": {
                "post": {
                    "operationId": "vectorMatch",
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["prompt", "top_k"],
                                    "properties": {
                                        "prompt": {"type": "string", "minLength": 1, "maxLength": 1000},
                                        "top_k": {**_NUMBER_OR_STRING, "description": f"1..{MAX_TOP_K}"},
                                        "embedding_rate": {
                                            **_NUMBER_OR_STRING,
                                            "description": "0..1, default 1",
                                        },
                                        "group_ids": _IDS,
                                        "data_ids": {**_IDS, "description": f"at most {MAX_DATA_IDS}"},
                                        "rerank_version": {
                                            "anyOf": [{"type": "null"}, {"enum": list(RERANKERS)}]
                                        },
                                        "doc_correlation": {**_NUMBER_OR_STRING, "description": "0.1..0.95"},
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "the best chunks, at most top_k, each scoring at least doc_correlation",
                            "headers": {
                                "X-Engram-Reranker": {"schema": {"type": "string", "enum": ["none"]}}
                            },
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["total", "list"],
                                        "properties": {
                                            "total": {"type": "integer", "minimum": 0},
                                            "list": {
                                                "type": "array",
                                                "items": {
                                                    "type": "object",
                                                    "required": [
                                                        "content",
                                                        "data_id",
                                                        "document_name",
                                                        "score",
                                                    ],
                                                    "properties": {
                                                        "content": {"type": "string"},
                                                        "data_id": {"type": "string"},
                                                        "document_name": {"type": "string"},
                                                        "engram_supersedes": {
                                                            "type": "array",
                                                            "items": {
                                                                "$ref": "#/components/schemas/Replacement"
                                                            },
                                                        },
                                                        "engram_superseded_by": {
                                                            "anyOf": [
                                                                {"type": "null"},
                                                                {"$ref": "#/components/schemas/Replacement"},
                                                            ]
                                                        },
                                                        "score": {
                                                            "type": "number",
                                                            "minimum": 0,
                                                            "maximum": 1,
                                                        },
                                                    },
                                                },
                                            },
                                        },
                                    }
                                }
                            },
                        },
                        **errors,
                    },
                }
            }
        },
    }
