"""The authority of a space: ``at://{authorityDid}/space/{type}/{skey}`` → ``authorityDid``."""

from __future__ import annotations


def space_authority(space: str) -> str | None:
    """The DID segment of a space URI, or None if ``space`` is not shaped like one."""
    if not isinstance(space, str) or not space.startswith("at://"):
        return None
    parts = space[len("at://") :].split("/")
    if len(parts) < 4 or parts[1] != "space" or not parts[0].startswith("did:") or not all(parts):
        return None
    return parts[0]
