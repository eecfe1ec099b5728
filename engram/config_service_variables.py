"""The service's own variables: where it listens, who it is (its DID, key and public URL), its data
directory, outbound policy, logs, PLC directory, admins and body limit.

A prefix of `Settings`' fields (engram/config_variables.py): `Settings` inherits them first, so the README
table's order holds. How a variable is declared: engram/config_fields.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network
from pathlib import Path

from .config_fields import as_data_dir, as_log_level, as_signing_key, text, var, whole
from .config_values import as_bool, as_dids, as_networks, as_url


@dataclass(frozen=True)
class ServiceVariables:
    """`ENGRAM_*` variables of the service's address and identity."""

    host: str = var(
        "ENGRAM_HOST",
        "127.0.0.1",
        text,
        "Address to listen on (`0.0.0.0` in the Docker image).",
        blank=True,
    )
    port: int = var(
        "ENGRAM_PORT",
        "8080",
        whole(0, 65535),
        "TCP port to listen on.",
    )
    data_dir: Path = var(  # noqa: RUF009 (a Path is immutable)
        "ENGRAM_DATA_DIR",
        "./engram-data",
        as_data_dir,
        "SQLite database, index files and keys live here.",
        blank=True,
    )
    public_url: str = var(
        "ENGRAM_PUBLIC_URL",
        None,
        None,
        "URL clients reach engram at. Default `http://localhost:<port>`.",
        value="http://localhost:8080",
    )
    service_did: str = var(
        "ENGRAM_SERVICE_DID",
        None,
        None,
        "engram's DID (the audience of reader signatures). Default: did:web of the public URL's host.",
        value="did:web:localhost%3A8080",
    )
    signing_key: str | None = var(
        "ENGRAM_SIGNING_KEY",
        None,
        as_signing_key,
        "engram's private key as a multibase private Multikey (`z...`, P-256 or secp256k1; `engram keygen` "
        "prints one). Default: generated in the data dir.",
        blank=True,
        value=None,
    )
    dev: bool = var(
        "ENGRAM_DEV",
        "0",
        as_bool,
        "`1` allows outbound requests to internal addresses and over plain http (did:web on localhost, fake "
        "PDSes); nothing else. Never in production (docs/security.md#outbound-requests).",
        blank=True,
    )
    outbound_allow: tuple[IPv4Network | IPv6Network, ...] = var(
        "ENGRAM_OUTBOUND_ALLOW",
        "",
        as_networks,
        "Comma-separated networks (`10.0.0.0/8`, `127.0.0.1`) engram may send requests to although they are "
        "internal (an internal PLC mirror). Empty: public addresses only "
        "(docs/security.md#outbound-requests).",
    )
    log_level: str = var(
        "ENGRAM_LOG_LEVEL",
        "info",
        as_log_level,
        "debug, info, warning or error. Logs are JSON lines on stderr.",
        blank=True,
    )
    plc_url: str = var(
        "ENGRAM_PLC_URL",
        "https://plc.directory",
        as_url,
        "PLC directory used to resolve did:plc.",
    )
    admin_dids: frozenset[str] = var(
        "ENGRAM_ADMIN_DIDS",
        "",
        as_dids,
        "Comma-separated DIDs allowed to call the remote admin methods.",
    )
    max_body_bytes: int = var(
        "ENGRAM_MAX_BODY_BYTES",
        "16777216",
        whole(1024),
        "Largest request body accepted (413 beyond).",
    )
