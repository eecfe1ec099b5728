"""Hostile files get a 4xx-kind refusal or a bounded skip, never another exception and never unbounded
memory (docs/documents.md#hostile-files): a small corpus of generated hostile files, and property tests
over random and mutated files."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import document_files as files

from engram.errors import EngramError
from engram.service.documents import kinds, ocr
from engram.service.documents.limits import Limits
from engram.service.documents.pipeline import prepare

CLIENT_KINDS = {"invalid", "too_large"}  # 400 and 413 at every door


def outcome(data: bytes, name: str | None = None) -> str:
    """The kind's name, or `error:<kind>/<name>` for a domain error; any other exception fails the test."""
    try:
        return prepare(data, name).extracted.kind
    except EngramError as exc:
        assert exc.kind in CLIENT_KINDS, exc
        return f"error:{exc.kind}/{exc.name}"


def peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize(
    ("make", "name", "expected"),
    [
        (lambda: files.zip_bomb("docx"), "bomb.docx", "error:too_large/ZipBomb"),
        (lambda: files.zip_bomb("xlsx"), "bomb.xlsx", "error:too_large/ZipBomb"),
        (lambda: files.zip_bomb("pptx"), "bomb.pptx", "error:too_large/ZipBomb"),
        (lambda: files.zip_bomb_small_parts("xlsx"), "many.xlsx", "error:too_large/ZipBomb"),
        (files.billion_laughs_docx, "laughs.docx", "error:invalid/XmlEntities"),
        (files.cyclic_pdf, "cyclic.pdf", "error:invalid/UnreadableFile"),
        (files.many_pages_pdf, "10k.pdf", "error:too_large/TooManyPages"),
        (lambda: b"%PDF-1.7\n" + b"\x00" * 5000, "empty.pdf", "error:invalid/UnreadableFile"),
        (lambda: b"PK\x03\x04" + b"\x00" * 100, "broken.docx", "error:invalid/UnsupportedFileType"),
        (
            lambda: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(512),
            "old.doc",
            "error:invalid/UnsupportedFileType",
        ),
        (
            lambda: b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)),
            "prog.md",
            "error:invalid/UnsupportedFileType",
        ),
    ],
)
def test_hostile_corpus_is_refused_with_a_client_error_in_bounded_memory(make, name, expected):
    data = make()
    result = []
    peak = peak_bytes(lambda: result.append(outcome(data, name)))
    assert result == [expected]
    assert peak < 64 * 1024 * 1024  # the 64 MiB bomb and 10,000 pages are never unpacked or read


def test_a_zip_that_is_no_office_file_names_what_it_is():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("readme.txt", "hi")
    with pytest.raises(EngramError, match="a ZIP archive that is not a DOCX, PPTX or XLSX document"):
        prepare(out.getvalue(), "archive.docx")


def test_wrong_extensions_and_declared_types_do_not_decide_the_type():
    pdf = files.pdf([["Quarterly numbers."]])
    sheet = files.xlsx_file([["a", "b"], ["1", "2"]])
    deck = files.pptx_file([("Title", ["line"])])
    assert outcome(pdf, "report.docx") == "pdf"
    assert outcome(sheet, "data.pdf") == "xlsx"
    assert outcome(deck, "deck.txt") == "pptx"
    assert kinds.detect(b"# Heading\n\ntext", "notes", "application/octet-stream") == "markdown"
    assert kinds.detect(b"a,b,c\n1,2,3\n4,5,6\n", None, "application/octet-stream") == "csv"
    assert kinds.detect(b"<!DOCTYPE html><p>x</p>", "x.txt") == "html"
    # a text that mentions the PDF header near its top is text; a PDF behind a few junk bytes is a PDF
    assert kinds.detect(b"# Types\n\nA PDF starts with `%PDF-`.\n", "documents.md") == "markdown"
    assert kinds.detect(b"\x00\xff\x13junk" + pdf, "scan") == "pdf"


def test_reading_past_the_time_bound_is_refused_not_left_running():
    text = "\n\n".join(f"paragraph {i}" for i in range(50_000)).encode()
    with pytest.raises(EngramError) as caught:
        prepare(text, "long.txt", limits=Limits(seconds=0.0))
    assert caught.value.name == "FileTooSlow" and caught.value.kind == "too_large"


def test_an_image_without_tesseract_is_a_counted_skip_not_silence(monkeypatch):
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (40, 20), "white").save(png, "PNG")
    monkeypatch.setenv("PATH", "")
    ocr.tesseract.cache_clear()
    try:
        prepared = prepare(png.getvalue(), "scan.png")
    finally:
        ocr.tesseract.cache_clear()
    assert (prepared.extracted.kind, prepared.extracted.ocr_skipped, prepared.chunks) == ("image", 1, [])
    assert "tesseract is not installed" in prepared.extracted.ocr_skip_reason


MAGIC = [b"", b"%PDF-1.4\n", b"PK\x03\x04", b"\x89PNG\r\n\x1a\n", b"\xef\xbb\xbf", b"<html>", b"# "]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.sampled_from(MAGIC),
    body=st.binary(max_size=2048),
    name=st.sampled_from([None, "a.pdf", "a.docx", "a.md", "a.csv", "a.xlsx", "a"]),
)
def test_random_bytes_are_read_or_refused_with_a_client_error(prefix, body, name):
    outcome(prefix + body, name)


SEEDS = {
    "pdf": files.pdf([["alpha beta"], ["gamma"]]),
    "docx": files.docx_file("T", [("H", ["para", "- item"])], table=[["a", "b"], ["1", "2"]]),
    "xlsx": files.xlsx_file([["a", "b"], [1, 2]]),
    "pptx": files.pptx_file([("T", ["x", "y"])]),
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(sorted(SEEDS)),
    cut=st.integers(min_value=0, max_value=100),
    flips=st.lists(st.tuples(st.integers(min_value=0, max_value=10**6), st.integers(0, 255)), max_size=8),
)
def test_damaged_office_and_pdf_files_are_read_or_refused_with_a_client_error(seed, cut, flips):
    data = bytearray(SEEDS[seed])
    for position, value in flips:
        data[position % len(data)] = value
    data = data[: max(1, len(data) * (100 - cut) // 100)] if cut else data
    outcome(bytes(data), f"x.{seed}")
