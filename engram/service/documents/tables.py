"""A table's rows as blocks, for every reader of tables (CSV, XLSX sheets; docs/documents.md#chunks).

The first non-empty row is the header; a header of `question,answer` makes the rows Q&A pairs; a table of
one row has no header, and that row is its content (a one-line CSV is data, not the names of nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .blocks import QA, ROW, Block

QA_HEADER = ("question", "answer")


def table_blocks(rows: Iterable[tuple[str, ...]], check: Callable[[], None]) -> list[Block]:
    """The blocks of one table's rows (cells already stripped to text); `check` runs before each row (the
    extraction deadline)."""
    blocks: list[Block] = []
    header: tuple[str, ...] | None = None
    for cells in rows:
        check()
        if not any(cells):
            continue
        if header is None:
            header = cells
        elif tuple(h.lower() for h in header[:2]) == QA_HEADER:
            if cells[0] and len(cells) > 1 and cells[1]:
                blocks.append(Block(QA, cells[0], header=header, cells=(cells[1],)))
        else:
            blocks.append(Block(ROW, header=header, cells=cells))
    if header is not None and not blocks:
        blocks.append(Block(ROW, cells=header))
    return blocks
