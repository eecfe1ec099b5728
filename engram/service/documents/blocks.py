"""The structure every extractor hands the chunker (docs/documents.md#structure).

A document is a flat list of blocks in reading order; headings carry their level, table rows their
header, and every block the page (PDF) or slide (PPTX) it came from, so chunks can cite it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HEADING, TEXT, ITEM, ROW, QA = "heading", "text", "item", "row", "qa"


@dataclass(frozen=True)
class Block:
    kind: str  # one of HEADING, TEXT, ITEM, ROW, QA
    text: str = ""  # HEADING/TEXT/ITEM: the text; QA: the question
    level: int = 0  # HEADING: 0 (a document title) .. 6
    page: int | None = None  # 1-based page or slide
    header: tuple[str, ...] = ()  # ROW: the table's header cells
    cells: tuple[str, ...] = ()  # ROW: this row's cells; QA: (answer,)


@dataclass
class Extracted:
    """What one file held: its detected type, the blocks, its page count (PDF/PPTX) and what OCR did."""

    kind: str
    blocks: list[Block] = field(default_factory=list)
    pages: int | None = None
    ocr_pages: int = 0  # pages (or images) whose text came from tesseract
    ocr_skipped: int = 0  # pages (or images) with no text layer that were not OCR-ed
    ocr_skip_reason: str | None = None  # why they were skipped (tesseract missing, timed out)

    def plain_text(self) -> str:
        """The text as one string, blocks on their own lines: what the Memory Bank chunker takes. A table
        reads as its rows, the header first, as the Memory Bank door's upstream reads a CSV (docs/memorybank.md)."""
        lines = []
        header: tuple[str, ...] = ()  # the header of the table whose rows are being written
        for block in self.blocks:
            if block.kind in (ROW, QA) and block.header != header:
                lines.append(" ".join(c for c in block.header if c))
            header = block.header if block.kind in (ROW, QA) else ()
            if block.kind == ROW:
                lines.append(" ".join(c for c in block.cells if c))
            elif block.kind == QA:
                lines.append(f"{block.text} {' '.join(block.cells)}")
            else:
                lines.append(block.text)
        return "\n".join(line for line in lines if line.strip())
