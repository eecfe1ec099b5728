"""The retrieval plugin's response models, written from its published schema (openai/chatgpt-retrieval-plugin
`models/models.py` and `models/api.py` at b28ddce5; the seed adds `user_id` to requests only).

FastAPI answers with `response_model.dict()` of these models, so every field appears, unset ones as null.
`as_fastapi_writes_it(model, answer)` is that answer for the same data: an engram answer must equal it.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")  # an answer with a field the models lack fails too


class Source(str, Enum):
    email = "email"
    file = "file"
    chat = "chat"


class DocumentChunkMetadata(_Strict):
    source: Source | None = None
    source_id: str | None = None
    url: str | None = None
    created_at: str | None = None
    author: str | None = None
    document_id: str | None = None


class DocumentChunkWithScore(_Strict):
    id: str | None = None
    text: str
    metadata: DocumentChunkMetadata
    embedding: list[float] | None = None
    score: float


class QueryResult(_Strict):
    query: str
    results: list[DocumentChunkWithScore]


class QueryResponse(_Strict):
    results: list[QueryResult]


class UpsertResponse(_Strict):
    ids: list[str]


class DeleteResponse(_Strict):
    success: bool


def as_fastapi_writes_it(model: type[BaseModel], answer: Any) -> Any:
    return model.model_validate(answer).model_dump(mode="json")
