"""How a variable is declared (`Variable`, `var`) and the parsers the declarations in
`engram/config_variables.py` use beyond the value checks of `config_values.py`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config_values import ConfigError, as_float, as_int, as_url
from .serving.event_loop import EVENT_LOOPS, default_event_loop, uvloop_available

Parse = Callable[[str, str], Any]  # (variable name, raw value) -> the field's value; errors name the variable


@dataclass(frozen=True)
class Variable:
    name: str
    default: str | None  # as a user would write it; None: unset (derived, or absent)
    help: str
    # None: derived from other variables by engram.config.read_env (the public URL from the port, ...)
    parse: Parse | None = None
    blank: bool = False  # an empty value means the default (else it is parsed, and may be refused)


def var(
    name: str,
    default: str | None,
    parse: Parse | None,
    help: str,
    *,
    blank: bool = False,
    value: Any = dataclasses.MISSING,
    factory: Callable[[], Any] | None = None,
) -> Any:
    """A `Settings` field declaring its variable; its default is the parsed `default` unless `value` (or
    `factory`) gives the value of an unset variable that is derived at start-up."""
    metadata = {"variable": Variable(name, default, help, parse, blank)}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    if value is dataclasses.MISSING:
        assert parse is not None and default is not None, name
        value = parse(name, default)
    return field(default=value, metadata=metadata)


def whole(lo: int, hi: int | None = None) -> Parse:
    return lambda name, raw: as_int(name, raw, lo, hi)


def real(lo: float) -> Parse:
    return lambda name, raw: as_float(name, raw, lo)


def text(name: str, raw: str) -> str:
    return raw


def as_data_dir(name: str, raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{name}={str(path)!r} exists and is not a directory")
    return path


def as_signing_key(name: str, raw: str) -> str:
    from .auth.crypto_keys import KeyFormatError, PrivateKey

    try:
        PrivateKey.from_multibase(raw.strip())
    except (KeyFormatError, ValueError):
        raise ConfigError(
            f"{name} must be a multibase private Multikey (z..., P-256 or secp256k1); `engram keygen` prints one"
        ) from None
    return raw


def as_log_level(name: str, raw: str) -> str:
    level = raw.lower()
    if level not in {"debug", "info", "warning", "error"}:
        raise ConfigError(f"{name}={level!r} must be debug, info, warning or error")
    return level


EMBEDDER_KINDS = {"builtin", "multilingual", "onnx", "sentence-transformers", "hashing", "none"}


def as_embedder(name: str, raw: str) -> str:
    embedder = raw.strip()
    if any(part.strip().split(":", 1)[0] not in EMBEDDER_KINDS for part in embedder.split(",")):
        raise ConfigError(
            f"{name}={embedder!r}: expected builtin, multilingual, onnx:<dir>, "
            "sentence-transformers:<dir>, hashing[:dims] or none, or several joined by commas"
        )
    return embedder


def as_event_loop(name: str, raw: str) -> str:
    loop = raw.strip().lower()
    if not loop:
        return default_event_loop()
    if loop not in EVENT_LOOPS:
        raise ConfigError(f"{name} must be one of {', '.join(EVENT_LOOPS)}, not {raw!r}")
    if loop == "uvloop" and not uvloop_available():
        raise ConfigError(f"{name}=uvloop but uvloop is not installed (pip install uvloop)")
    return loop


def as_node_url(name: str, raw: str) -> str | None:
    return as_url(name, raw.strip()) if raw.strip() else None
