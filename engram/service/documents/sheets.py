"""XLSX as table rows, with openpyxl (docs/documents.md#types): pure Python, read-only streaming mode (rows
are read one at a time, not the whole sheet at once), cached values rather than formulas, and it parses
through defusedxml when that is installed (engram depends on it). Each sheet is a table (tables.py: its first
non-empty row the header); its name is a heading.
"""

from __future__ import annotations

import io

import openpyxl

from .blocks import HEADING, Block, Extracted
from .kinds import XLSX
from .limits import Deadline
from .tables import table_blocks


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split())


def xlsx_extract(data: bytes, deadline: Deadline) -> Extracted:
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    out = Extracted(XLSX)
    try:
        for sheet in workbook.worksheets:
            out.blocks.append(Block(HEADING, sheet.title, level=1))
            rows = (tuple(_cell(v) for v in values) for values in sheet.iter_rows(values_only=True))
            out.blocks.extend(table_blocks(rows, deadline.check))
    finally:
        workbook.close()
    return out
