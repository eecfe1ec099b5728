"""GPTBots vector match: request body -> `MatchRequest`, ranked hits -> response body (pure functions).

Field rules follow the GPTBots "Vector Similarity Matching" API (docs/compat.md "GPTBots"): numbers may
arrive as numeric strings (older clients send `"top_k": "5"`); `null` or an absent `group_ids`/`data_ids`
means "not given", and so does an empty `data_ids` (all docs, as the API describes the field: docs/compat.md),
while `group_ids: []` means "given, empty". Only the given lists form the search scope (their union); when
neither is given every knowledge base of the key is searched.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...errors import InvalidInput

if TYPE_CHECKING:
    from ...service.ranking import RankedMemory

RERANKERS = ("BGE-Rerank", "Jina-reranker-v2-base-multilingual", "Jina-colbert-v2", "BCE-Rerank")
MAX_TOP_K = 50
MAX_DATA_IDS = 10
MAX_PROMPT_CHARS = 1000  # what the query embedder accepts (engram/service/text_query.py)


class TooManyDocuments(InvalidInput):
    """More than MAX_DATA_IDS data_ids: GPTBots' own code 40332."""

    default_name = "TooManyDocuments"


@dataclass(frozen=True)
class MatchRequest:
    prompt: str
    top_k: int
    embedding_rate: float = 1.0
    group_ids: tuple[str, ...] | None = None
    data_ids: tuple[str, ...] | None = None
    rerank_version: str | None = None
    doc_correlation: float | None = None


def _number(body: dict, field: str, default: float | None) -> float | None:
    value = body.get(field)
    if value is None:
        return default
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise InvalidInput(f"{field} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{field} must be a number")
    return float(value)


def _in_range(field: str, value: float | None, low: float, high: float) -> None:
    if value is not None and not low <= value <= high:
        raise InvalidInput(f"{field} must be in [{low:g}, {high:g}], got {value:g}")


def _ids(body: dict, field: str) -> tuple[str, ...] | None:
    value = body.get(field)
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(v, str | int) and not isinstance(v, bool) for v in value
    ):
        raise InvalidInput(f"{field} must be null or an array of ids")
    ids = tuple(dict.fromkeys(str(v) for v in value))
    if any(not 0 < len(v) <= 512 for v in ids):
        raise InvalidInput(f"{field}: ids must be non-empty strings of at most 512 characters")
    return ids


def parse_match(body: dict[str, Any]) -> MatchRequest:
    prompt = body.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidInput("prompt is required and must be a non-empty string")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise InvalidInput(f"prompt must be at most {MAX_PROMPT_CHARS} characters")
    top_k = _number(body, "top_k", None)
    if top_k is None:
        raise InvalidInput("top_k is required")
    if top_k != int(top_k):
        raise InvalidInput(f"top_k must be an integer, got {top_k:g}")
    _in_range("top_k", top_k, 1, MAX_TOP_K)
    rate = _number(body, "embedding_rate", 1.0)
    _in_range("embedding_rate", rate, 0.0, 1.0)
    correlation = _number(body, "doc_correlation", None)
    _in_range("doc_correlation", correlation, 0.1, 0.95)
    rerank = body.get("rerank_version")
    if rerank is not None and rerank not in RERANKERS:
        raise InvalidInput(f"rerank_version must be one of {', '.join(RERANKERS)}")
    data_ids = _ids(body, "data_ids") or None  # empty: all docs, as the API describes the field
    if data_ids is not None and len(data_ids) > MAX_DATA_IDS:
        raise TooManyDocuments(f"documents queried cannot exceed {MAX_DATA_IDS}")
    return MatchRequest(
        prompt=prompt,
        top_k=int(top_k),
        embedding_rate=rate,
        group_ids=_ids(body, "group_ids"),
        data_ids=data_ids,
        rerank_version=rerank,
        doc_correlation=correlation,
    )


def unknown_groups(request: MatchRequest, known: dict[str, str]) -> list[str]:
    """group_ids that are not the key's knowledge bases (refused: a body never widens a key's reach)."""
    return [g for g in request.group_ids or () if g not in known]


def match_item(hit: RankedMemory) -> dict[str, Any]:
    """One result: `data_id` is the memory's document (attrs.documentId, else the memory itself); the
    `engram_` fields are engram's documented extras (supersession, docs/compat.md)."""
    memory, attrs = hit.memory, hit.memory.attrs
    return {
        "content": memory.text,
        "data_id": str(attrs.get("documentId") or memory.rkey),
        "document_name": str(attrs.get("documentName") or memory.source or ""),
        "score": round(min(max(hit.score, 0.0), 1.0), 6),
        "engram_supersedes": [{"uri": r.uri, "basis": r.basis} for r in hit.supersedes],
        "engram_superseded_by": (
            None if hit.replaced_by is None else {"uri": hit.replaced_by.uri, "basis": hit.replaced_by.basis}
        ),
    }


def match_response(items: list[dict[str, Any]], doc_correlation: float | None) -> dict[str, Any]:
    """`total` is the number returned (not a corpus count), after the doc_correlation minimum."""
    kept = [i for i in items if doc_correlation is None or i["score"] >= doc_correlation]
    return {"total": len(kept), "list": kept}
