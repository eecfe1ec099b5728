"""Reading a `multipart/form-data` upload (a file part and small text fields), bounded as it streams in
(docs/documents.md#limits): the file part may be at most `max_file_bytes`, each text field 64 KiB, and
the body is refused by its Content-Length before anything is read when it cannot fit. aiohttp's
`client_max_size` does not bound `request.multipart()`, so the bounds are kept here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from ..errors import InvalidInput, TooLarge

MAX_FIELD_BYTES = 64 * 1024
MAX_PARTS = 16
_SLACK = 256 * 1024  # the fields and multipart framing around the file


@dataclass
class Upload:
    fields: dict[str, str] = field(default_factory=dict)
    file: bytes | None = None
    filename: str | None = None
    content_type: str | None = None  # as the client declared it: a hint only (docs/documents.md#types)


async def _read_part(part: BodyPartReader, limit: int, what: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await part.read_chunk(64 * 1024)
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise TooLarge(f"{what} may be at most {limit} bytes", "FileTooLarge")
        chunks.append(chunk)


async def read_upload(request: web.Request, file_field: str, max_file_bytes: int) -> Upload:
    """The upload's text fields and its `file_field` part; a body that is not multipart has neither."""
    if request.content_length is not None and request.content_length > max_file_bytes + _SLACK:
        raise TooLarge(f"an uploaded file may be at most {max_file_bytes} bytes", "FileTooLarge")
    upload = Upload()
    if not request.content_type.startswith("multipart/"):
        return upload
    try:
        reader = await request.multipart()
        for _ in range(MAX_PARTS):
            part = await reader.next()
            if part is None:
                return upload
            if not isinstance(part, BodyPartReader):  # a nested multipart: neither a file nor a field
                raise InvalidInput("a multipart part may not itself be multipart", "InvalidMultipart")
            if part.name == file_field and upload.file is None:
                upload.file = await _read_part(part, max_file_bytes, "an uploaded file")
                upload.filename = part.filename
                upload.content_type = part.headers.get("Content-Type")
            elif part.name:
                raw = await _read_part(part, MAX_FIELD_BYTES, f"form field {part.name!r}")
                upload.fields.setdefault(part.name, raw.decode("utf-8", "replace"))
            else:
                await _read_part(part, MAX_FIELD_BYTES, "an unnamed form part")
    # aiohttp's multipart parser on bad framing; a part's malformed header line is its HTTP parser's error
    except (ValueError, AssertionError, RuntimeError, HttpProcessingError) as exc:
        raise InvalidInput(f"the multipart body cannot be read ({exc})", "InvalidMultipart") from None
    raise InvalidInput(f"a multipart body may have at most {MAX_PARTS} parts", "InvalidMultipart")
