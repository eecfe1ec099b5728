"""The tag namespace the shims keep for their own bookkeeping (docs/memorybank.md "Storage").

Memory Bank files each chunk under machine tags `mb.doc=…`, `mb.user=<key id>/<user_id>`, … and finds a
tenant's chunks by them, so a tag of that namespace is an access boundary: only the shim that owns it may
write it. Every other way in (XRPC, MCP `remember`, imports, the CLI) goes through `MemoryService.write`,
which refuses such tags (engram/service/memories.py). Being bookkeeping, not content, these tags are also
left out of the keyword index (engram/search/keyword_index.py) and of the text engram embeds.
"""

from __future__ import annotations

from collections.abc import Iterable

# Compared case-insensitively, so "MB.user=…" is refused too: no spelling of the namespace is left open.
RESERVED_TAG_PREFIXES = ("mb.",)


def is_reserved_tag(tag: str) -> bool:
    return isinstance(tag, str) and tag.lower().startswith(RESERVED_TAG_PREFIXES)


def content_tags(tags: Iterable[str]) -> list[str]:
    """The tags that describe content: all but the shims' bookkeeping."""
    return [tag for tag in tags if not is_reserved_tag(tag)]
