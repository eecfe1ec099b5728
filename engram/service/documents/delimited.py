"""CSV as table rows, or as Q&A pairs when its header is `question,answer` (docs/documents.md#chunks).

The standard library's csv module, with the delimiter sniffed among `,`, `;` and tab; the rows become
blocks as every table's do (tables.py).
"""

from __future__ import annotations

import csv
import io

from ...errors import InvalidInput
from .blocks import Block
from .limits import Deadline
from .tables import table_blocks


def csv_blocks(text: str, deadline: Deadline) -> list[Block]:
    sample = text[:20_000]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    rows = csv.reader(io.StringIO(text), dialect)
    try:
        return table_blocks((tuple(cell.strip() for cell in row) for row in rows), deadline.check)
    except csv.Error as exc:
        raise InvalidInput(
            f"this CSV file cannot be read (line {rows.line_num}: {exc})", "UnreadableFile"
        ) from None
