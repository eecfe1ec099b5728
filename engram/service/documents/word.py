"""DOCX as blocks, with python-docx (docs/documents.md#types): the maintained reader of WordprocessingML,
which parses with lxml's `resolve_entities=False`. The body is walked in order, so tables stay where
they are among the paragraphs; "Heading N" and "Title" styles are headings, list styles and numbered
paragraphs are items.
"""

from __future__ import annotations

import io

import docx
from docx.table import Table
from docx.text.paragraph import Paragraph

from .blocks import HEADING, ITEM, ROW, TEXT, Block, Extracted
from .kinds import DOCX
from .limits import Deadline


def docx_extract(data: bytes, deadline: Deadline) -> Extracted:
    document = docx.Document(io.BytesIO(data))
    out = Extracted(DOCX)
    body = document.element.body
    for child in body.iterchildren():
        deadline.check()
        tag = child.tag.rsplit("}", 1)[-1]
        if tag == "p":
            block = _paragraph(Paragraph(child, document))
            if block is not None:
                out.blocks.append(block)
        elif tag == "tbl":
            out.blocks.extend(table_rows(Table(child, document), deadline))
    return out


def _paragraph(paragraph: Paragraph) -> Block | None:
    text = " ".join(paragraph.text.split())
    if not text:
        return None
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    if style == "Title":  # above "Heading 1": the document's own title heads every section
        return Block(HEADING, text, level=0)
    if style.startswith("Heading"):
        digits = style[len("Heading") :].strip()
        return Block(HEADING, text, level=min(6, int(digits)) if digits.isdigit() else 1)
    numbered = paragraph._p.pPr is not None and paragraph._p.pPr.numPr is not None
    if numbered or "List" in style:
        return Block(ITEM, text)
    return Block(TEXT, text)


def table_rows(table, deadline: Deadline, page: int | None = None) -> list[Block]:
    """A table's rows under its first row as header (python-docx and python-pptx tables alike)."""
    rows = []
    header: tuple[str, ...] | None = None
    for row in table.rows:
        deadline.check()
        cells = tuple(" ".join(cell.text.split()) for cell in row.cells)
        if header is None:
            header = cells
        elif any(cells):
            rows.append(Block(ROW, header=header, cells=cells, page=page))
    if header is not None and not rows and any(header):  # a one-row table is text
        rows.append(Block(TEXT, " | ".join(c for c in header if c), page=page))
    return rows
