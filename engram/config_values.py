"""Parsers of configuration values: each checks one raw string and names its variable in the error.

`engram/config.py` reads the environment and builds `Settings` from these; kept apart so that module stays
the table of variables and their wiring. A failed check raises `ConfigError`, which `engram serve` prints
before exiting with status 2.
"""

from __future__ import annotations

from ipaddress import IPv4Network, IPv6Network, ip_network
from urllib.parse import urlsplit


class ConfigError(ValueError):
    pass


def as_int(name: str, raw: str, lo: int, hi: int | None = None) -> int:
    try:
        value = int(raw, 10)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None
    if value < lo or (hi is not None and value > hi):
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise ConfigError(f"{name}={value} must be {bound}")
    return value


def as_float(name: str, raw: str, lo: float) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not a number") from None
    if not value >= lo:
        raise ConfigError(f"{name}={raw} must be at least {lo}")
    return value


def as_bool(name: str, raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ConfigError(f"{name}={raw!r} must be 1/0, true/false, yes/no or on/off")


def as_did(name: str, raw: str) -> str:
    parts = raw.split(":")
    if len(parts) < 3 or parts[0] != "did" or not parts[1].isalpha() or not parts[2] or "#" in raw:
        raise ConfigError(f"{name}={raw!r} is not a DID (expected did:<method>:<id>, no #fragment)")
    return raw


def as_dids(name: str, raw: str) -> frozenset[str]:
    return frozenset(as_did(name, item.strip()) for item in raw.split(",") if item.strip())


def as_networks(name: str, raw: str) -> tuple[IPv4Network | IPv6Network, ...]:
    """Comma-separated IP networks; an address alone is its own /32 or /128."""
    try:
        return tuple(ip_network(item.strip(), strict=False) for item in raw.split(",") if item.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} must be comma-separated IP networks (10.0.0.0/8, ::1)") from None


def as_url(name: str, raw: str) -> str:
    parts = urlsplit(raw)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"{name}={raw!r} must be an http(s) URL with a host and no query or fragment")
    return raw.rstrip("/")


def as_origins(name: str, raw: str) -> tuple[str, ...]:
    """Web origins, `scheme://host[:port]` each (no path), lower-cased as browsers send them."""
    origins = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        parts = urlsplit(item)
        if parts.scheme not in {"http", "https"} or not parts.hostname or parts.path not in ("", "/"):
            raise ConfigError(f"{name}: {item!r} must be an origin like https://host or https://host:port")
        if parts.query or parts.fragment or parts.username:
            raise ConfigError(f"{name}: {item!r} must be an origin like https://host or https://host:port")
        origins.append(f"{parts.scheme}://{parts.netloc}".lower())
    return tuple(origins)


def as_index_store(name: str, raw: str | None) -> str | None:
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme == "file" and not parts.netloc and parts.path.startswith("/") and parts.path != "/":
        return raw
    if parts.scheme == "s3" and parts.netloc and not parts.query and not parts.fragment:
        return raw
    raise ConfigError(f"{name}={raw!r} must be file:///absolute/dir or s3://bucket[/prefix]")


def as_database_url(name: str, raw: str | None) -> str | None:
    if raw is None or not raw.strip():
        return None
    parts = urlsplit(raw.strip())
    if parts.scheme not in {"postgresql", "postgres"} or not (parts.hostname or parts.query):
        raise ConfigError(f"{name} must be a postgresql://user@host:port/database URL")
    return raw.strip()
