"""Key files on the client side: the holder key `engram search` signs with, admin keys, and the keys of the
local data dir (read without creating anything, so running `engram search` never adds a service key).

The file format is the data dir's (engram.auth.identity: JSON with alg + hex, 0600, written atomically);
a file holding just a multibase private key (what `engram keygen` prints) is accepted too."""

from __future__ import annotations

import os
from pathlib import Path

from ..auth.crypto_keys import KeyFormatError, PrivateKey
from ..auth.identity import SERVICE_KEY_FILE, build_keyring, read_key_file, write_key_file
from ..auth.keyring import LocalKeyring
from ..config import Settings
from .errors import CliError

HOLDER_KEY_FILE = "holder.key"


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "engram"


def read_key(path: Path) -> tuple[PrivateKey, str | None]:
    """(key, DID named in the file if any); a CliError that names the file on any problem."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise CliError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    try:
        if text.startswith("{"):
            return read_key_file(path)
        return PrivateKey.from_multibase(text), None
    except (KeyFormatError, ValueError) as exc:
        raise CliError(f"{path} is not an engram key file or multibase private key ({exc})") from None


def write_key(path: Path, key: PrivateKey, did: str | None = None) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_key_file(path, key, did)


def load_or_create_holder_key(path: Path | None) -> PrivateKey:
    """The holder key at `path` (must exist), or the client's own in ~/.config/engram, made on first use."""
    if path is not None:
        key = read_key(path)[0]
    else:
        default = config_dir() / HOLDER_KEY_FILE
        if not default.exists():
            write_key(default, PrivateKey.generate("ES256"))
        key = read_key(default)[0]
    if key.alg != "ES256":
        raise CliError("holder keys must be P-256 (atproto-space signatures are ecdsa-p256-sha256)")
    return key


def local_keyring(settings: Settings, service_did: str | None = None) -> LocalKeyring:
    """The DIDs whose keys the local data dir holds (engram's own, operators'), or an empty keyring.
    `service_did`: the DID the server answers as (its describeService), when the caller knows it: the
    data dir's service key is that DID's, whatever DID the local settings would derive."""
    keys = settings.data_dir / "keys"
    service_key = None
    if settings.signing_key:
        service_key = PrivateKey.from_multibase(settings.signing_key.strip())
    elif (keys / SERVICE_KEY_FILE).is_file():
        service_key = read_key(keys / SERVICE_KEY_FILE)[0]
    operators = {}
    if keys.is_dir():
        for path in sorted(keys.glob("*.key")):
            key, did = read_key(path)
            if did and path.name != SERVICE_KEY_FILE:
                operators[did] = key
    if service_key is None:
        keyring = LocalKeyring()
        for did, key in operators.items():
            keyring.add(did, key)
        return keyring
    return build_keyring(service_did or settings.service_did, service_key, operators)
