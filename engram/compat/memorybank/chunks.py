"""Splitting a document into chunks exactly as the retrieval plugin does (docs/memorybank.md "Chunking").

The rule, step by step: encode the text with cl100k_base (special-token text is ordinary text); take the
next 200 tokens and decode them; if that text has a `.`, `?`, `!` or newline after character 350, cut just
after the last one; replace newlines with spaces and strip; keep the chunk only if it is longer than 5
characters; advance by the token count of the (possibly cut) text, re-encoded. After 10,000 rounds whatever
is left becomes one last chunk (same >5 rule). There is no overlap between chunks.

Reproduced line for line because clients rely on the chunk ids `{document_id}_{i}` and their boundaries.
"""

from __future__ import annotations

from .tokenizer import cl100k_base

CHUNK_TOKENS = 200
CUT_AFTER_CHARS = 350
MIN_CHUNK_CHARS = 5  # a chunk must be longer than this to be kept
MAX_CHUNKS = 10_000
_CUT_MARKS = (".", "?", "!", "\n")


def split_text(text: str) -> list[str]:
    if not text or text.isspace():
        return []
    encoding = cl100k_base()
    tokens = encoding.encode(text, disallowed_special=())
    chunks: list[str] = []
    rounds = 0
    while tokens and rounds < MAX_CHUNKS:
        window = tokens[:CHUNK_TOKENS]
        piece = encoding.decode(window)
        if not piece or piece.isspace():
            tokens = tokens[len(window) :]
            continue  # a whitespace-only window is dropped without counting as a round
        cut = max(piece.rfind(mark) for mark in _CUT_MARKS)
        if cut > CUT_AFTER_CHARS:
            piece = piece[: cut + 1]
        cleaned = piece.replace("\n", " ").strip()
        if len(cleaned) > MIN_CHUNK_CHARS:
            chunks.append(cleaned)
        tokens = tokens[len(encoding.encode(piece, disallowed_special=())) :]
        rounds += 1
    if tokens:
        rest = encoding.decode(tokens).replace("\n", " ").strip()
        if len(rest) > MIN_CHUNK_CHARS:
            chunks.append(rest)
    return chunks


def chunk_ids(document_id: str, count: int) -> list[str]:
    return [f"{document_id}_{i}" for i in range(count)]
