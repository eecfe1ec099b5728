"""OCR of scanned pages and images with Debian's tesseract-ocr when it is installed, and a counted skip
when it is not (docs/documents.md#ocr). The images are drawn by the test (Pillow's built-in font)."""

from __future__ import annotations

import io
import shutil

import pytest
from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont

from engram.service.documents import ocr

TEXT = "Invoice total 4821 euros"


def scanned_png() -> bytes:
    image = Image.new("L", (900, 120), 255)
    ImageDraw.Draw(image).text((20, 30), TEXT, fill=0, font=ImageFont.load_default(size=48))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def scanned_pdf() -> bytes:
    """Two pages: one with a text layer, one that is only a picture of text."""
    document = FPDF()
    document.set_font("helvetica", size=11)
    document.add_page()
    document.multi_cell(0, 6, "Cover page with real text.")
    document.add_page()
    document.image(io.BytesIO(scanned_png()), x=10, y=10, w=180)
    return bytes(document.output())


@pytest.fixture
def no_tesseract(monkeypatch):
    monkeypatch.setenv("PATH", "")
    ocr.tesseract.cache_clear()
    yield
    ocr.tesseract.cache_clear()


async def test_without_tesseract_a_scanned_page_is_skipped_and_counted(library, no_tesseract):
    result = await library.ingest(scanned_pdf(), "scan.pdf")
    assert (result.pages, result.chunks, result.ocr_pages, result.ocr_skipped) == (2, 1, 0, 1)
    assert "tesseract is not installed" in result.ocr_skip_reason
    assert result.json()["ocrSkipped"] == 1
    [row] = await library.ctx.services.documents.list(library.space)
    assert (row.ocr_skipped, row.chunks) == (1, 1)
    image = await library.ingest(scanned_png(), "scan.png")
    assert (image.kind, image.chunks, image.ocr_skipped, image.status) == ("image", 0, 1, "created")


@pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="tesseract-ocr not installed (.ci/run installs it)"
)
async def test_with_tesseract_scanned_pages_and_images_become_searchable_chunks(library):
    ocr.tesseract.cache_clear()
    result = await library.ingest(scanned_pdf(), "scan.pdf")
    assert (result.chunks, result.ocr_pages, result.ocr_skipped) == (2, 1, 0)
    chunks = await library.chunks("scan.pdf")
    assert [(m.attrs["page"], m.text) for m in chunks] == [(1, "Cover page with real text."), (2, TEXT)]
    image = await library.ingest(scanned_png(), "scan.png")
    assert (image.kind, image.ocr_pages) == ("image", 1)
    assert [m.text for m in await library.chunks("scan.png")] == [TEXT]
