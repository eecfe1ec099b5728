"""No write stores U+0000, on either backend: PostgreSQL holds it in neither text nor jsonb (a `\\u0000`
escape in attrs would break every `::jsonb` cast of its row), so every way in refuses it alike."""

import pytest

from engram.errors import InvalidInput
from engram.store import MemoryWrite
from engram.store.memory_reads import space_status
from engram.store.memory_writes import put_memories

ALICE = "did:plc:alice"


@pytest.mark.parametrize(
    ("fields", "where"),
    [
        ({"text": "a\x00b"}, "text"),
        ({"text": "ok", "tags": ("fine", "t\x00")}, "tags.1"),
        ({"text": "ok", "source": "s\x00"}, "source"),
        ({"text": "ok", "attrs": {"conversationKey": "k\x00"}}, "attrs.conversationKey"),
        ({"text": "ok", "attrs": {"nested": [{"k\x00": 1}]}}, "attrs.nested.0.k\x00"),
    ],
)
async def test_a_nul_anywhere_is_refused_and_nothing_is_written(store, space, fields, where):
    with pytest.raises(InvalidInput, match="NUL") as info:
        await store.write(put_memories, space, [MemoryWrite(ALICE, "fine"), MemoryWrite(ALICE, **fields)])
    assert where in str(info.value)
    assert (await store.read(space_status, space)).memories == 0
