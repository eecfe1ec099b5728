"""One file through the steps, synchronously (the service runs it in the worker pool): detect the type,
check the container, extract blocks, cut chunks (docs/documents.md). Every refusal is a domain error
(`InvalidInput` naming the type or the damage, `TooLarge` naming the bound), never a parser's traceback.
"""

from __future__ import annotations

import logging
import zipfile
import zlib
from dataclasses import dataclass

from ...errors import EngramError, InvalidInput, TooLarge
from . import kinds, ocr
from .blocks import Extracted
from .chunking import DEFAULT_BUDGET, DEFAULT_OVERLAP, Chunk, chunk_blocks
from .delimited import csv_blocks
from .limits import Deadline, Limits
from .markup import html_blocks, markdown_blocks, text_blocks
from .zipguard import check_container

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ChunkSettings:
    budget: int = DEFAULT_BUDGET
    overlap: int = DEFAULT_OVERLAP

    def check(self) -> None:
        if not 16 <= self.budget <= 2000 or not 0 <= self.overlap < self.budget // 2 + 1:
            raise InvalidInput(
                "chunk budget must be 16..2000 tokens and overlap at most half of it", "BadChunking"
            )


@dataclass
class Prepared:
    extracted: Extracted
    chunks: list[Chunk]


def extract(
    data: bytes, name: str | None, declared: str | None, limits: Limits, deadline: Deadline
) -> Extracted:
    if len(data) > limits.max_bytes:
        raise TooLarge(f"this file has {len(data)} bytes; at most {limits.max_bytes}", "FileTooLarge")
    kind = kinds.detect(data, name, declared)
    try:
        return _extract(kind, data, name, limits, deadline)
    except EngramError:
        raise
    except (RecursionError, MemoryError) as exc:
        raise InvalidInput(
            f"this {kind} file is too deeply nested to read ({type(exc).__name__})", "UnreadableFile"
        ) from None
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, AttributeError, IndexError, OSError, SyntaxError,
            UnicodeError, EOFError, zlib.error, NotImplementedError, RuntimeError) as exc:  # fmt: skip
        # The Office parsers raise these on damaged parts; the caller gets a 400 naming the type.
        log.info("unreadable %s file: %r", kind, exc)
        raise InvalidInput(
            f"this {kind} file cannot be read ({type(exc).__name__})", "UnreadableFile"
        ) from None


def _extract(kind: str, data: bytes, name: str | None, limits: Limits, deadline: Deadline) -> Extracted:
    if kind == kinds.PDF:
        from .pdf import pdf_extract

        return pdf_extract(data, limits, deadline)
    if kind in (kinds.DOCX, kinds.PPTX, kinds.XLSX):
        check_container(data, kind, limits)
        if kind == kinds.DOCX:
            from .word import docx_extract

            return docx_extract(data, deadline)
        if kind == kinds.PPTX:
            from .slides import pptx_extract

            return pptx_extract(data, limits, deadline)
        from .sheets import xlsx_extract

        return xlsx_extract(data, deadline)
    if kind == kinds.IMAGE:
        return _image(data, limits, deadline)
    text = kinds.decode_text(data) or ""
    if len(text) > limits.max_text_chars:
        raise TooLarge(f"this file holds more than {limits.max_text_chars} characters", "TooMuchText")
    reader = {kinds.HTML: html_blocks, kinds.MARKDOWN: markdown_blocks, kinds.CSV: csv_blocks}.get(
        kind, text_blocks
    )
    return Extracted(kind, reader(text, deadline))


def _image(data: bytes, limits: Limits, deadline: Deadline) -> Extracted:
    out = Extracted(kinds.IMAGE, pages=1)
    try:
        text = ocr.image_text(data, min(limits.ocr_seconds, deadline.left()))
    except ocr.OcrUnavailable as exc:
        out.ocr_skipped, out.ocr_skip_reason = 1, str(exc)
        return out
    out.ocr_pages = 1
    out.blocks = text_blocks(text, deadline)
    return out


def prepare(
    data: bytes,
    name: str | None,
    declared: str | None = None,
    limits: Limits | None = None,
    chunking: ChunkSettings | None = None,
) -> Prepared:
    """The file's blocks and chunks (in the worker pool: parsing is CPU work)."""
    limits = limits or Limits()
    chunking = chunking or ChunkSettings()
    deadline = Deadline(limits.seconds)
    extracted = extract(data, name, declared, limits, deadline)
    chunks = chunk_blocks(extracted.blocks, chunking.budget, chunking.overlap)
    if len(chunks) > limits.max_chunks:
        raise TooLarge(f"this file makes {len(chunks)} chunks; at most {limits.max_chunks}", "TooManyChunks")
    return Prepared(extracted, chunks)
