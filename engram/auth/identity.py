"""engram's own signing key and the operator keys it holds, under ``<data_dir>/keys/``.

- ``service.key``: created on first start (P-256 by default) unless a key is configured.
- ``<sanitised did>.key``: operator keys (``did:plc:abc`` → ``did_plc_abc.key``), loaded into the
  ``LocalKeyring`` so hosted spaces with those authorities resolve offline.

File format: one JSON object ``{"alg": "ES256", "privateKeyHex": "...", "did": "..."}`` (``did`` only for
operator keys; the sanitised file name is lossy). Files are 0600 in a 0700 directory, written atomically
(temp file + fsync + rename). A configured key (``ENGRAM_SERVICE_KEY``) is a multibase private Multikey
(``z`` + base58btc of the p256-priv/secp256k1-priv multicodec + 32-byte scalar), because that form carries
its curve; hex would need a second setting for the algorithm.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import orjson

from engram.auth.crypto_keys import Alg, KeyFormatError, PrivateKey
from engram.auth.did_document import Service
from engram.auth.keyring import LocalKeyring

SERVICE_KEY_FILE = "service.key"


def keys_dir(data_dir: Path) -> Path:
    path = Path(data_dir) / "keys"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(path, 0o700)  # mkdir's mode is masked by umask, and an existing dir keeps its mode
    return path


def write_key_file(path: Path, key: PrivateKey, did: str | None = None) -> None:
    record: dict[str, str] = {"alg": key.alg, "privateKeyHex": key.to_hex()}
    if did is not None:
        record["did"] = did
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".key")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(orjson.dumps(record) + b"\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_key_file(path: Path) -> tuple[PrivateKey, str | None]:
    try:
        record = orjson.loads(path.read_bytes())
        return PrivateKey.from_hex(record["alg"], record["privateKeyHex"]), record.get("did")
    except (orjson.JSONDecodeError, KeyError, TypeError, KeyFormatError) as e:
        raise KeyFormatError(f"{path}: not a valid engram key file ({e})") from None


def load_or_create_service_key(
    data_dir: Path, configured: str | None = None, alg: Alg = "ES256"
) -> PrivateKey:
    """The configured key if given, else ``<data_dir>/keys/service.key``, created on first call."""
    if configured:
        return PrivateKey.from_multibase(configured.strip())
    path = keys_dir(data_dir) / SERVICE_KEY_FILE
    if path.exists():
        return read_key_file(path)[0]
    key = PrivateKey.generate(alg)
    write_key_file(path, key)
    return key


def operator_key_path(data_dir: Path, did: str) -> Path:
    if not did.startswith("did:"):
        raise ValueError(f"not a DID: {did!r}")
    return keys_dir(data_dir) / (re.sub(r"[^A-Za-z0-9._-]", "_", did) + ".key")


def save_operator_key(data_dir: Path, did: str, key: PrivateKey) -> Path:
    path = operator_key_path(data_dir, did)
    write_key_file(path, key, did)
    return path


def load_operator_keys(data_dir: Path) -> dict[str, PrivateKey]:
    keys: dict[str, PrivateKey] = {}
    for path in sorted(keys_dir(data_dir).glob("*.key")):
        if path.name == SERVICE_KEY_FILE:
            continue
        key, did = read_key_file(path)
        if did:
            keys[did] = key
    return keys


def build_keyring(
    service_did: str,
    service_key: PrivateKey,
    operator_keys: dict[str, PrivateKey],
    service_endpoint: str | None = None,
) -> LocalKeyring:
    """A keyring answering for engram's own DID (with the services of its did.json) and operator DIDs."""
    keyring = LocalKeyring()
    services = {}
    if service_endpoint:
        services = {
            "#atproto_space_syncer": Service("AtprotoSpaceSyncer", service_endpoint),
            "#engram": Service("EngramService", service_endpoint),
            # engram is the space host of the spaces it hosts under its own DID (credential exchange,
            # membership), and their repo host: clients read records from the authority's #atproto_pds.
            "#atproto_space_host": Service("AtprotoSpaceHost", service_endpoint),
            "#atproto_pds": Service("AtprotoPersonalDataServer", service_endpoint),
        }
    keyring.add(service_did, service_key, services)
    for did, key in operator_keys.items():
        keyring.add(did, key)
    return keyring


SERVED_AS_FILE = "served-as.json"  # in keys/: the DID the last `engram serve` on this data dir answered as


def record_served_did(data_dir: Path, did: str) -> None:
    """Written by every serving process at start: the CLI's local commands compare their own settings'
    DID with it (a space created under another DID than the server's could never be searched)."""
    path = keys_dir(data_dir) / SERVED_AS_FILE
    if served_did(data_dir) == did:
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".served-as-")
    with os.fdopen(fd, "wb") as out:
        out.write(orjson.dumps({"serviceDid": did}))
    os.replace(tmp, path)


def served_did(data_dir: Path) -> str | None:
    try:
        value = orjson.loads((Path(data_dir) / "keys" / SERVED_AS_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    did = value.get("serviceDid") if isinstance(value, dict) else None
    return did if isinstance(did, str) else None
