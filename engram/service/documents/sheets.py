"""XLSX as table rows, with openpyxl (docs/documents.md#types): pure Python, read-only streaming mode (rows
are read one at a time, not the whole sheet at once), cached values rather than formulas, and it parses
through defusedxml when that is installed (engram depends on it). Each sheet's first non-empty row is the
header; its name is a heading.
"""

from __future__ import annotations

import io

import openpyxl

from .blocks import HEADING, QA, ROW, Block, Extracted
from .delimited import QA_HEADER
from .kinds import XLSX
from .limits import Deadline


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
            header: tuple[str, ...] | None = None
            for values in sheet.iter_rows(values_only=True):
                deadline.check()
                cells = tuple(_cell(v) for v in values)
                if not any(cells):
                    continue
                if header is None:
                    header = cells
                elif tuple(h.lower() for h in header[:2]) == QA_HEADER and len(cells) > 1:
                    if cells[0] and cells[1]:
                        out.blocks.append(Block(QA, cells[0], cells=(cells[1],)))
                else:
                    out.blocks.append(Block(ROW, header=header, cells=cells))
    finally:
        workbook.close()
    return out
