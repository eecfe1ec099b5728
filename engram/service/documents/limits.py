"""The bounds of one file's ingestion (docs/documents.md#limits): size, pages, unpacked bytes, chunks, time.

Extraction runs in the worker pool, where a thread cannot be stopped from outside, so the time bound is a
`Deadline` the extractors check between pages, paragraphs and rows; a file that runs past it is refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ...errors import TooLarge


@dataclass(frozen=True)
class Limits:
    max_bytes: int = 32 * 1024 * 1024  # the file as uploaded
    max_pages: int = 2000  # PDF pages or PPTX slides
    max_unpacked_bytes: int = 256 * 1024 * 1024  # the sum of an Office container's members, as declared
    max_member_ratio: int = 200  # unpacked / packed of one member above 1 MiB: a zip bomb
    max_zip_members: int = 10_000
    max_text_chars: int = 20_000_000  # extracted text
    max_chunks: int = 5000  # chunks one file may make: embedding them is the cost
    seconds: float = 60.0  # extraction and chunking of one file
    ocr_seconds: float = 30.0  # one tesseract run


class Deadline:
    def __init__(self, seconds: float):
        self.seconds = seconds
        self._end = time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self._end:
            raise TooLarge(
                f"reading this file took longer than {self.seconds:g} s; split it or send the text",
                "FileTooSlow",
            )

    def left(self) -> float:
        return max(0.0, self._end - time.monotonic())
