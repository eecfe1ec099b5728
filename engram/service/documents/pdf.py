"""PDF pages as blocks, with pypdf (docs/documents.md#types): pure Python, actively maintained, and it
reads damaged files leniently (`strict=False`). Each page's text is split into paragraphs that carry the
page number; a page without a text layer is OCR-ed from its images when tesseract is installed.
"""

from __future__ import annotations

import io
import logging
import re

from pypdf import PdfReader
from pypdf.errors import PdfReadError, PyPdfError

from ...errors import InvalidInput, TooLarge
from . import ocr
from .blocks import TEXT, Block, Extracted
from .kinds import PDF
from .limits import Deadline, Limits

_PARAGRAPHS = re.compile(r"\n\s*\n")
# pypdf logs every oddity of a damaged file as a warning; the file's outcome is reported to the caller.
logging.getLogger("pypdf").setLevel(logging.ERROR)


def _unreadable(exc: BaseException) -> InvalidInput:
    return InvalidInput(f"this PDF file cannot be read ({type(exc).__name__}: {exc})"[:500], "UnreadableFile")


def pdf_extract(data: bytes, limits: Limits, deadline: Deadline) -> Extracted:
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise InvalidInput("this PDF file is encrypted with a password", "EncryptedFile")
        count = len(reader.pages)
    except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise _unreadable(exc) from None
    if count > limits.max_pages:
        raise TooLarge(f"this PDF file has {count} pages; at most {limits.max_pages}", "TooManyPages")
    out = Extracted(PDF, pages=count)
    chars = 0
    for number in range(1, count + 1):
        deadline.check()
        try:
            page = reader.pages[number - 1]
            text = page.extract_text() or ""
        except (PdfReadError, PyPdfError, ValueError, KeyError, TypeError, AttributeError, RecursionError,
                ZeroDivisionError) as exc:  # fmt: skip
            raise _unreadable(exc) from None
        if not text.strip():
            text = _ocr_page(page, out, limits, deadline)
        chars += len(text)
        if chars > limits.max_text_chars:
            raise TooLarge(f"this PDF file holds more than {limits.max_text_chars} characters", "TooMuchText")
        for paragraph in _PARAGRAPHS.split(text):
            cleaned = " ".join(paragraph.split())
            if cleaned:
                out.blocks.append(Block(TEXT, cleaned, page=number))
    return out


def _ocr_page(page, out: Extracted, limits: Limits, deadline: Deadline) -> str:
    """The text of a page without a text layer, from its images; counted as OCR-ed or skipped."""
    try:
        images = [image.data for image in page.images]
    except Exception:  # noqa: BLE001 - pypdf's image decoders raise many types; the page is counted as skipped
        out.ocr_skipped += 1
        out.ocr_skip_reason = "the page's images could not be decoded"
        return ""
    if not images:
        return ""
    texts = []
    for image in images:
        try:
            texts.append(ocr.image_text(image, min(limits.ocr_seconds, deadline.left())))
        except ocr.OcrUnavailable as exc:
            out.ocr_skipped += 1
            out.ocr_skip_reason = str(exc)
            return ""
    out.ocr_pages += 1
    return "\n\n".join(texts)
