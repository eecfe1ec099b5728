"""Which kind of file this is, told from its bytes (docs/documents.md#types).

The content decides: magic bytes for PDF and images, the member names of a ZIP container for DOCX, PPTX
and XLSX, and for text a sniff of its first lines (HTML tags, Markdown headings, a consistent CSV
delimiter). The file name and the declared MIME type only choose between text kinds the content leaves
open (a `.md` file of plain paragraphs is Markdown, a `.txt` one text), so an upload declared
`application/octet-stream` is read like any other: the retrieval plugin's weak spot is not copied.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile

from ...errors import InvalidInput

PDF, DOCX, PPTX, XLSX, HTML, MARKDOWN, CSV, TEXT, IMAGE = (
    "pdf",
    "docx",
    "pptx",
    "xlsx",
    "html",
    "markdown",
    "csv",
    "text",
    "image",
)
KINDS = (PDF, DOCX, PPTX, XLSX, HTML, MARKDOWN, CSV, TEXT, IMAGE)
MEDIA_TYPES = {
    PDF: "application/pdf",
    DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    PPTX: "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    XLSX: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    HTML: "text/html",
    MARKDOWN: "text/markdown",
    CSV: "text/csv",
    TEXT: "text/plain",
    IMAGE: "image/*",
}
_ZIP_MARKERS = (("word/document.xml", DOCX), ("ppt/presentation.xml", PPTX), ("xl/workbook.xml", XLSX))
_IMAGE_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*", b"GIF87a", b"GIF89a", b"BM")
_TEXT_HINTS = {
    ".md": MARKDOWN,
    ".markdown": MARKDOWN,
    ".html": HTML,
    ".htm": HTML,
    ".csv": CSV,
    ".tsv": CSV,
    ".txt": TEXT,
    "text/markdown": MARKDOWN,
    "text/html": HTML,
    "text/csv": CSV,
    "text/plain": TEXT,
}
_HTML_START = re.compile(
    rb"^\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|div|p|h[1-6]|table|ul|ol|section|article|main)\b",
    re.IGNORECASE | re.DOTALL,
)
_MD_SIGNS = re.compile(
    r"^(#{1,6}\s+\S|```|\s*[-*+]\s+\S.*\n\s*[-*+]\s+\S|\|.+\|\s*\n\|?\s*:?-{3,})", re.MULTILINE
)


class UnsupportedType(InvalidInput):
    """A file engram cannot read; the message names what it is (a 400 at every door)."""

    def __init__(self, what: str):
        super().__init__(
            f"unsupported file type: {what}; engram reads PDF, DOCX, PPTX, XLSX, HTML, Markdown, CSV and"
            " plain text",
            "UnsupportedFileType",
        )


def detect(data: bytes, name: str | None = None, declared: str | None = None) -> str:
    """The kind of the file (one of KINDS), or UnsupportedType naming what it looks like."""
    head = data[:1024]
    # a PDF may carry junk before its header (readers look in the first KiB), but a text file that merely
    # mentions "%PDF-" near its top (this repository's docs/documents.md) is text
    if head.lstrip().startswith(b"%PDF-") or (b"%PDF-" in head and decode_text(data) is None):
        return PDF
    if data.startswith(b"PK\x03\x04"):
        return _zip_kind(data)
    if data.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        raise UnsupportedType(
            "a legacy Office file (OLE2: .doc, .xls or .ppt); save it as DOCX, XLSX or PPTX"
        )
    if data.startswith(_IMAGE_MAGIC) or data[8:12] == b"WEBP":
        return IMAGE
    text = decode_text(data)
    if text is None:
        raise UnsupportedType(f"binary data ({_describe(data)})")
    return _text_kind(data, text, _hint(name, declared))


def _zip_kind(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise UnsupportedType(f"a damaged ZIP archive ({exc})") from None
    for member, kind in _ZIP_MARKERS:
        if member in names:
            return kind
    if "content.xml" in names and "mimetype" in names:
        raise UnsupportedType("an OpenDocument file (ODT/ODS/ODP); save it as DOCX, XLSX or PPTX")
    raise UnsupportedType("a ZIP archive that is not a DOCX, PPTX or XLSX document")


def decode_text(data: bytes) -> str | None:
    """The bytes as text (UTF-8, or UTF-16 with a BOM), None when they are not text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Not UTF-8: Windows-1252 text is common in CSV exports; binary data shows control bytes.
        if any(b < 9 or 13 < b < 32 for b in data[:4096]):
            return None
        try:
            text = data.decode("cp1252")
        except UnicodeDecodeError:
            return None
    return None if "\x00" in text[:4096] else text


def _hint(name: str | None, declared: str | None) -> str | None:
    if declared:
        found = _TEXT_HINTS.get(declared.split(";")[0].strip().lower())
        if found:
            return found
    if name and "." in name:
        return _TEXT_HINTS.get(name[name.rfind(".") :].lower())
    return None


def _text_kind(data: bytes, text: str, hint: str | None) -> str:
    if _HTML_START.match(data[:4096]):
        return HTML
    if hint in (HTML, MARKDOWN, CSV):
        return hint
    if hint != TEXT:
        if _MD_SIGNS.search(text[:20_000]):
            return MARKDOWN
        if _looks_delimited(text[:20_000]):
            return CSV
    return TEXT


def _looks_delimited(head: str) -> bool:
    lines = [line for line in head.splitlines()[:20] if line.strip()]
    if len(lines) < 2:
        return False
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t")
    except csv.Error:
        return False
    widths = {len(row) for row in csv.reader(lines, dialect)}
    return len(widths) == 1 and widths.pop() >= 2


def _describe(data: bytes) -> str:
    return "first bytes " + data[:8].hex(" ") if data else "empty"
