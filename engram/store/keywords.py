"""Keyword search: BM25 over a space's memories with SQLite FTS5 (the `memories_fts` table).

User text is never passed to FTS5 as query syntax (quotes, `NEAR`, `-`, `:` would be errors or
operators): it is split into words with FTS5's own tokenizer rules approximated by `\\w+`, and each word
is quoted and OR-ed, so any input is a valid query and a memory matching more (rarer) words ranks higher.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence

from engram.store.spaces import require_space
from engram.store.writes import filter_clauses
from engram.xrpc.errors import InvalidRequestError

_WORD = re.compile(r"\w+", re.UNICODE)
MAX_QUERY_WORDS = 64
MAX_KEYWORD_LIMIT = 1000


def fts_query(text: str) -> str | None:
    """An FTS5 query OR-ing the distinct words of `text`, or None when it has no words."""
    words = list(dict.fromkeys(word.lower() for word in _WORD.findall(text or "")))[:MAX_QUERY_WORDS]
    return " OR ".join(f'"{word}"' for word in words) or None


def keyword_search(
    conn: sqlite3.Connection,
    space_uri: str,
    text: str,
    *,
    limit: int = 50,
    author: str | None = None,
    tags: Sequence[str] = (),
    since: str | None = None,
) -> list[tuple[int, float]]:
    """(row id, BM25 score) of the best keyword matches, best first; higher scores are better (FTS5's
    bm25() is negated). Filters are the same as search: author, all-of tags, createdAt >= since."""
    space = require_space(conn, space_uri)
    if not isinstance(limit, int) or not 1 <= limit <= MAX_KEYWORD_LIMIT:
        raise InvalidRequestError(f"limit must be an integer in 1..{MAX_KEYWORD_LIMIT}")
    query = fts_query(text)
    if query is None:
        return []
    where, params = filter_clauses(space.id, author, tags, since, table="m.")
    where, params = ["memories_fts MATCH ?", *where], [query, *params]
    rows = conn.execute(
        "SELECT m.row_id, -bm25(memories_fts, 1.0, 0.5, 0.25) AS score FROM memories_fts JOIN memories m"
        f" ON m.row_id = memories_fts.rowid WHERE {' AND '.join(where)}"
        " ORDER BY score DESC, m.row_id DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [(row_id, float(score)) for row_id, score in rows]
