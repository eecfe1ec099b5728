"""OCR with Debian's `tesseract-ocr`, when it is installed (docs/documents.md#ocr).

The binary is found on PATH once per process; each image is one `tesseract stdin stdout` subprocess with a
time limit, run from the worker thread that extracts the file (never on the event loop). When tesseract is
missing, or a run fails or times out, the caller counts the page as skipped and says why; nothing is
silently dropped. tesseract reads with its default language (`eng` on Debian).
"""

from __future__ import annotations

import shutil
import subprocess
from functools import cache

MAX_IMAGE_BYTES = 20 * 1024 * 1024


@cache
def tesseract() -> str | None:
    return shutil.which("tesseract")


class OcrUnavailable(Exception):
    """Why an image was not read (tesseract missing, failed, timed out); the message is the reason."""


def image_text(image: bytes, seconds: float) -> str:
    binary = tesseract()
    if binary is None:
        raise OcrUnavailable("tesseract is not installed (Debian: apt-get install tesseract-ocr)")
    if len(image) > MAX_IMAGE_BYTES:
        raise OcrUnavailable(f"an image larger than {MAX_IMAGE_BYTES} bytes")
    try:
        done = subprocess.run(
            [binary, "stdin", "stdout"],
            input=image,
            capture_output=True,
            timeout=max(1.0, seconds),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise OcrUnavailable(f"tesseract took longer than {seconds:g} s") from None
    except OSError as exc:
        raise OcrUnavailable(f"tesseract could not run ({exc})") from None
    if done.returncode != 0:
        raise OcrUnavailable("tesseract could not read the image")
    return done.stdout.decode("utf-8", "replace")
