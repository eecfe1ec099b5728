"""One-time operator sign-in links, shared between `engram console login` and the running server.

The CLI and the server are separate processes, so a link lives as a file under the data dir:
``<data_dir>/console/links/<sha256(token)>``, holding its expiry (Unix seconds). The raw token exists only
in the printed link. Redeeming reads the file and then unlinks it; `unlink` succeeds for exactly one
caller, so a link works once even when two requests race for it. Files (not a SQLite table) keep the
console out of the store's numbered migrations.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

LINK_TTL_S = 600  # the "valid for 10 minutes"
_HEX = frozenset("0123456789abcdef")


def links_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "console" / "links"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_link_token(data_dir: Path, now: float, ttl_s: float = LINK_TTL_S) -> str:
    """A fresh token valid until `now + ttl_s`; expired link files are swept on the way."""
    folder = links_dir(data_dir)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    sweep_expired(folder, now)
    token = secrets.token_urlsafe(32)
    path = folder / _digest(token)
    # O_EXCL + 0600: nobody else on the machine reads the file, and a (vanishingly unlikely) clash fails.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(f"{now + ttl_s:.3f}\n")
    return token


def redeem_link_token(data_dir: Path, token: str, now: float) -> bool:
    """True once for a live token; False for an unknown, used or expired one."""
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        return False
    path = links_dir(data_dir) / _digest(token)
    try:
        expires = float(path.read_text(encoding="ascii").strip())
        path.unlink()  # the one atomic step: only one redeemer gets past it
    except (FileNotFoundError, ValueError):
        return False
    return now < expires


def sweep_expired(folder: Path, now: float) -> None:
    for path in folder.iterdir():
        if len(path.name) != 64 or not set(path.name) <= _HEX:
            continue
        try:
            if float(path.read_text(encoding="ascii").strip()) <= now:
                path.unlink()
        except (FileNotFoundError, ValueError):
            continue
