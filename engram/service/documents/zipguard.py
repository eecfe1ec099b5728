"""Checks on an Office container (DOCX, PPTX, XLSX are ZIP archives) before a parser opens it
(docs/documents.md#hostile-files).

- A zip bomb declares members that unpack to far more than the file: the sum of the declared sizes is
  bounded, and so is the ratio of any large member. Python's zipfile never unpacks past a member's declared
  size (a lying header ends in a CRC error), so the declared sizes are a bound on what parsing can unpack.
- XML entity expansion ("billion laughs") needs a DTD: OOXML parts never carry one, so a part whose prolog
  declares a DOCTYPE or ENTITY is refused. (python-docx and python-pptx also parse with lxml's
  `resolve_entities=False`, and openpyxl through defusedxml: this check is the one answer for all three.)
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib

from ...errors import InvalidInput, TooLarge
from .limits import Limits

_PROLOG_BYTES = 64 * 1024
_DTD = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)
_BIG_MEMBER = 1 << 20


def check_container(data: bytes, kind: str, limits: Limits) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise InvalidInput(f"this {kind.upper()} file is damaged ({exc})", "UnreadableFile") from None
    with archive:
        members = archive.infolist()
        if len(members) > limits.max_zip_members:
            raise TooLarge(
                f"this {kind.upper()} file has {len(members)} parts; at most {limits.max_zip_members}",
                "ZipBomb",
            )
        unpacked = sum(m.file_size for m in members)
        if unpacked > limits.max_unpacked_bytes:
            raise TooLarge(
                f"this {kind.upper()} file unpacks to {unpacked} bytes; at most {limits.max_unpacked_bytes}",
                "ZipBomb",
            )
        for member in members:
            if member.file_size > _BIG_MEMBER and member.file_size > limits.max_member_ratio * max(
                1, member.compress_size
            ):
                raise TooLarge(
                    f"part {member.filename} of this {kind.upper()} file is compressed"
                    f" {member.file_size // max(1, member.compress_size)}:1, a zip bomb",
                    "ZipBomb",
                )
            if member.filename.endswith((".xml", ".rels", ".vml")):
                try:
                    with archive.open(member) as part:
                        prolog = part.read(_PROLOG_BYTES)
                except (
                    zipfile.BadZipFile,
                    OSError,
                    ValueError,
                    EOFError,
                    zlib.error,
                    NotImplementedError,
                ) as exc:
                    raise InvalidInput(
                        f"part {member.filename} of this {kind.upper()} file is damaged ({exc})",
                        "UnreadableFile",
                    ) from None
                if _DTD.search(prolog):
                    raise InvalidInput(
                        f"part {member.filename} of this {kind.upper()} file declares a DTD (XML entities"
                        " are refused: Office parts never carry one)",
                        "XmlEntities",
                    )
