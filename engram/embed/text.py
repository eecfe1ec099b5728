"""What text actually gets embedded, shared by ingestion and text search so both sides agree.

The document rule is the protocol's `embedText` (docs/embedders.md#what-text-is-embedded),
so a space embedded elsewhere gets the same vectors here: the text is cut at 24000
UTF-8 bytes, "\\n\\nTags: a, b" is appended when there are tags, and the space's documentPrefix goes in
front. A query is the space's queryPrefix + q. These prefixes are the ones a space declares; an embedder
may add its own model prefix (e.g. e5's "query: ") inside `embed`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MAX_DOCUMENT_BYTES = 24000


def cut_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` whose UTF-8 encoding fits in `max_bytes`, never splitting a character."""
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    # The slice is valid UTF-8 except possibly for a partial character at its very end, which
    # errors="ignore" drops; nothing else can be lost because the rest came from a valid str.
    return data[:max_bytes].decode("utf-8", errors="ignore")


def document_text(text: str, tags: Sequence[str] = (), prefix: str = "") -> str:
    body = cut_utf8(text, MAX_DOCUMENT_BYTES)
    if tags:
        body += "\n\nTags: " + ", ".join(tags)
    return prefix + body


def query_text(q: str, prefix: str = "") -> str:
    return prefix + q


def round_through_f16(vector: np.ndarray) -> np.ndarray:
    """The float32 vector a caller would have sent: vectors travel as f16, so text search rounds the same."""
    return np.asarray(vector, dtype=np.float32).astype(np.float16).astype(np.float32)
