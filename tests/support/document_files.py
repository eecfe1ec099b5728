"""Files the document tests generate (no binary fixture is stored or downloaded): one builder per type,
and hostile files built byte by byte (docs/documents.md#hostile-files)."""

from __future__ import annotations

import io
import zipfile

import docx
import openpyxl
import pptx
from fpdf import FPDF


def pdf(pages: list[list[str]]) -> bytes:
    """A text PDF, one list of paragraphs per page (fpdf2, core Helvetica: Latin-1 text)."""
    document = FPDF()
    document.set_font("helvetica", size=11)
    for paragraphs in pages:
        document.add_page()
        for paragraph in paragraphs:
            document.multi_cell(0, 6, paragraph)
            document.ln(6)
    return bytes(document.output())


def docx_file(
    title: str, sections: list[tuple[str, list[str]]], table: list[list[str]] | None = None
) -> bytes:
    document = docx.Document()
    document.add_heading(title, 0)
    for heading, paragraphs in sections:
        document.add_heading(heading, 1)
        for paragraph in paragraphs:
            if paragraph.startswith("- "):
                document.add_paragraph(paragraph[2:], style="List Bullet")
            else:
                document.add_paragraph(paragraph)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_file(slides: list[tuple[str, list[str]]]) -> bytes:
    deck = pptx.Presentation()
    for title, lines in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        frame = slide.placeholders[1].text_frame
        frame.text = lines[0]
        for line in lines[1:]:
            paragraph = frame.add_paragraph()
            paragraph.text = line
            paragraph.level = 1
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def xlsx_file(rows: list[list], title: str = "Prices") -> bytes:
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = title
    for row in rows:
        sheet.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def csv_file(rows: list[list[str]]) -> bytes:
    import csv

    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


# --- hostile files ---------------------------------------------------------------------------------------


def zip_bomb(kind: str = "docx", unpacked: int = 64 * 1024 * 1024) -> bytes:
    """An Office container whose main part is `unpacked` bytes of zeros (deflate: ~1000:1)."""
    main = {"docx": "word/document.xml", "xlsx": "xl/workbook.xml", "pptx": "ppt/presentation.xml"}[kind]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        info = zipfile.ZipInfo(main)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=True) as part:
            block = b"\x00" * (1 << 20)
            for _ in range(unpacked >> 20):
                part.write(block)
    return out.getvalue()


def zip_bomb_small_parts(kind: str = "xlsx") -> bytes:
    """Many parts, each just under the ratio check's size floor but together far past the unpacked bound."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/workbook.xml" if kind == "xlsx" else "word/document.xml", "<x/>")
        for i in range(300):
            archive.writestr(f"xl/media/pad{i}.bin", b"\x00" * (1 << 20))
    return out.getvalue()


BILLION_LAUGHS = (
    b'<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        f'<!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">'.encode()
        for i in range(1, 10)
    )
    + b']>\n<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body><w:p><w:r>'
    b"<w:t>&lol9;</w:t></w:r></w:p></w:body></w:document>"
)


def billion_laughs_docx() -> bytes:
    """A real DOCX whose document part is replaced by the billion-laughs XML."""
    source = zipfile.ZipFile(io.BytesIO(docx_file("T", [("H", ["p"])])))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = BILLION_LAUGHS if info.filename == "word/document.xml" else source.read(info)
            archive.writestr(info.filename, data)
    return out.getvalue()


def raw_pdf(objects: dict[int, bytes], root: int = 1) -> bytes:
    """A PDF from numbered object bodies, with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets.get(number, 0)
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, root, xref)
    return bytes(out)


def cyclic_pdf() -> bytes:
    """A page tree whose Pages node lists itself among its kids."""
    return raw_pdf(
        {
            1: b"<< /Type /Catalog /Pages 2 0 R >>",
            2: b"<< /Type /Pages /Kids [2 0 R 3 0 R] /Count 2 >>",
            3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>",
        }
    )


def many_pages_pdf(pages: int = 10_000) -> bytes:
    """`pages` empty pages sharing one page tree (about 60 bytes each)."""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>"}
    kids = b" ".join(b"%d 0 R" % (3 + i) for i in range(pages))
    objects[2] = b"<< /Type /Pages /Kids [" + kids + b"] /Count %d /MediaBox [0 0 612 792] >>" % pages
    for i in range(pages):
        objects[3 + i] = b"<< /Type /Page /Parent 2 0 R >>"
    return raw_pdf(objects)
