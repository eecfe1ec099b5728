"""Blocks into chunks that follow the document's structure (docs/documents.md#chunks).

- Headings open sections; a section's paragraphs and list items are packed into chunks of at most
  `budget` tokens, each starting with the section's heading path, and a section that spills over repeats
  the last `overlap` tokens of the chunk before. A chunk never spans two pages (PDF) or slides (PPTX).
- A table row is one chunk, every cell under its header (`header: value` lines, GPTBots' table format).
- A Q&A pair is one chunk.

A token here is a whitespace-separated word: the budget is about the embedder's window (MiniLM reads 256
word pieces, about 190 English words), not a tokenizer's count.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from .blocks import HEADING, ITEM, QA, ROW, Block

DEFAULT_BUDGET = 160
DEFAULT_OVERLAP = 20


@dataclass(frozen=True)
class Chunk:
    text: str
    page: int | None
    section: str | None  # the heading path, "Chapter › Section"
    kind: str  # "section", "row" or "qa"


def row_text(block: Block) -> str:
    header = block.header or ()
    lines = []
    for i, (name, value) in enumerate(zip_longest(header, block.cells, fillvalue="")):
        if value:
            lines.append(f"{name or f'column {i + 1}'}: {value}")
    return "\n".join(lines)


def chunk_blocks(
    blocks: list[Block], budget: int = DEFAULT_BUDGET, overlap: int = DEFAULT_OVERLAP
) -> list[Chunk]:
    if budget < 1 or not 0 <= overlap < budget:
        raise ValueError("budget must be >= 1 and overlap in [0, budget)")
    chunks: list[Chunk] = []
    path: list[tuple[int, str]] = []
    words: list[str] = []  # the open chunk's body, as words
    page: int | None = None
    carried = 0  # how many of `words` were carried over from the chunk before (overlap)

    def section() -> str | None:
        return " › ".join(title for _, title in path) or None

    def emit(body: list[str], at: int | None) -> None:
        head = section()
        text = " ".join(body)
        chunks.append(Chunk(f"{head}\n{text}" if head else text, at, head, "section"))

    def flush() -> None:
        nonlocal words, carried
        if len(words) > carried:
            emit(words, page)
        words, carried = [], 0

    for block in blocks:
        if block.kind == HEADING:
            flush()
            while path and path[-1][0] >= block.level:
                path.pop()
            path.append((block.level, block.text))
            continue
        if block.kind in (ROW, QA):
            flush()
            text = (
                row_text(block) if block.kind == ROW else f"Question: {block.text}\nAnswer: {block.cells[0]}"
            )
            if text:
                chunks.append(Chunk(text, block.page, section(), "row" if block.kind == ROW else "qa"))
            continue
        if block.page != page:
            flush()
            page = block.page
        new = (["-"] if block.kind == ITEM else []) + block.text.split()
        while new:
            room = budget - len(words)
            if room <= 0 or (len(new) > room and len(words) > carried and len(new) <= budget):
                # the block does not fit: close this chunk and carry its tail into the next, as much of
                # the overlap as leaves room for a block that fits a chunk whole (it is never split for it)
                keep = overlap if len(new) > budget else min(overlap, budget - len(new))
                tail = words[-keep:] if keep > 0 and len(words) > carried else []
                flush()
                words, carried = list(tail), len(tail)
                continue
            words += new[:room]
            new = new[room:]
    flush()
    return chunks
