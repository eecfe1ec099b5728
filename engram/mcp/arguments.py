"""Tool arguments held to the input schema each tool publishes (docs/mcp.md#errors): no argument the tool
does not declare, and no value of another JSON type than declared (the SDK's pydantic models would take
`"5"` for an integer and `"yes"` for a boolean, and drop an unknown argument, so a typo like `tag` for
`tags` would silently lose the tags). The constraints within a type (lengths, ranges, formats) stay
pydantic's, checked next by the SDK. Messages name the argument and the expected type, never the value.
"""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator


def close_schema(schema: dict[str, Any]) -> Draft202012Validator:
    """Publish that the tool takes no other arguments (`additionalProperties: false`); the validator of the
    closed schema, built once per tool (build_server), not per call."""
    schema["additionalProperties"] = False
    return Draft202012Validator(schema)


def argument_errors(validator: Draft202012Validator, arguments: dict[str, Any] | None) -> str | None:
    """`name: reason` for each argument the tool's schema refuses by name or by type; None when none is."""
    schema = validator.schema
    found = []
    for error in validator.iter_errors(arguments or {}):
        if error.validator == "additionalProperties" and not error.path:
            declared = schema.get("properties", {})
            found += [
                f"{name}: not an argument of this tool" for name in error.instance if name not in declared
            ]
        elif error.validator in ("type", "anyOf", "oneOf") and error.path:
            allowed = _types(error.schema)
            if (
                allowed
                and _json_type(error.instance) not in allowed
                and not (_json_type(error.instance) == "integer" and "number" in allowed)
            ):
                where = ".".join(str(part) for part in error.path)
                found.append(f"{where}: must be {' or '.join(sorted(allowed))}")
    return "; ".join(dict.fromkeys(found)) or None


def _types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return set(declared)
    branches = schema.get("anyOf") or schema.get("oneOf") or []
    return {t for branch in branches if isinstance(branch, dict) for t in _types(branch)}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"
