"""CSV as table rows, or as Q&A pairs when its header is `question,answer` (docs/documents.md#chunks).

The standard library's csv module, with the delimiter sniffed among `,`, `;` and tab.
"""

from __future__ import annotations

import csv
import io

from ...errors import InvalidInput
from .blocks import QA, ROW, Block
from .limits import Deadline

QA_HEADER = ("question", "answer")


def csv_blocks(text: str, deadline: Deadline) -> list[Block]:
    sample = text[:20_000]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = csv.reader(io.StringIO(text), dialect)
    blocks: list[Block] = []
    header: tuple[str, ...] | None = None
    try:
        for row in rows:
            deadline.check()
            cells = tuple(cell.strip() for cell in row)
            if not any(cells):
                continue
            if header is None:
                header = cells
                continue
            if tuple(h.lower() for h in header[:2]) == QA_HEADER:
                if cells[0] and len(cells) > 1 and cells[1]:
                    blocks.append(Block(QA, cells[0], cells=(cells[1],)))
            else:
                blocks.append(Block(ROW, header=header, cells=cells))
    except csv.Error as exc:
        raise InvalidInput(
            f"this CSV file cannot be read (line {rows.line_num}: {exc})", "UnreadableFile"
        ) from None
    return blocks
