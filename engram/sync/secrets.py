"""Secrets of the read-access methods (app passwords, refresh tokens): one 0600 JSON file per space under
``<data_dir>/sync/secrets/``, never in SQLite (whose file and backups are shared more widely) and never
logged. The file is written to a temporary name and renamed, so a crash never leaves half a secret."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson


class SecretStore:
    def __init__(self, data_dir: Path):
        self._dir = data_dir / "sync" / "secrets"

    def _path(self, space_uri: str) -> Path:
        return self._dir / f"{hashlib.sha256(space_uri.encode()).hexdigest()[:32]}.json"

    def save(self, space_uri: str, secrets: dict[str, Any]) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self._dir, 0o700)
        path = self._path(space_uri)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps({"space": space_uri, **secrets}))
        os.replace(tmp, path)

    def load(self, space_uri: str) -> dict[str, Any]:
        try:
            data = orjson.loads(self._path(space_uri).read_bytes())
        except FileNotFoundError:
            return {}
        data.pop("space", None)
        return data

    def update(self, space_uri: str, **changes: Any) -> None:
        self.save(space_uri, {**self.load(space_uri), **changes})

    def delete(self, space_uri: str) -> None:
        self._path(space_uri).unlink(missing_ok=True)
