"""Sim memory operations over the key's primary space: append messages to, read, list, replace and delete
conversations addressed by (scope, key), as Sim's routes address rows. A scope (a workflowId or a
workspaceId) is a namespace inside the key's primary space, so a key never reaches another space.

Every write is one store transaction that either commits whole or not at all: the messages are embedded
first, then written and read back inside the transaction, so a request that answers an error has changed
nothing (docs/compat.md "Sim").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import InternalFailure
from ...service.embedding import embed_missing
from ...store import Memory, MemoryWrite, memory_writes, write_batch
from ...store import conversations as store_conversations
from ...store.conversations import Scope
from ...store.database import Deferred
from ...store.tid import new_tid
from .messages import Message, message_attrs, new_sim_id

if TYPE_CHECKING:
    from ...context import AppContext


async def _writes(ctx: AppContext, space_uri: str, messages: Sequence[Message]) -> list[MemoryWrite]:
    """One write per message, embedded when engram runs the space's model (before any transaction)."""
    space = await ctx.services.spaces.require_for_write(space_uri)  # its model; the transaction reads it
    writes = [MemoryWrite(author=space.authority, text=m.text) for m in messages]
    return await embed_missing(ctx.embedder, ctx.pool, space, writes)


def _read_back(conn, space_uri: str, scope: Scope, key: str) -> list[Memory]:
    messages = store_conversations.conversation(conn, space_uri, scope, key)
    if not messages:  # raising rolls the transaction back: no orphan message is left behind
        raise InternalFailure("the conversation could not be read back after writing it")
    return messages


def _orderable(existing: list[Memory]) -> bool:
    """Whether new messages sort after every existing one by sequence here; not when an imported message's
    `sequence` is not an integer (it sorts by the backend's JSON ordering): the conversation is then read
    back whole."""
    return all(_integer(m.attrs.get("sequence")) for m in existing)


def _appended(existing: list[Memory], new: list[Memory | None]) -> list[Memory]:
    """The conversation after an append, from the messages read before it and the new rows alone (read by
    the write itself, `send_memories(written=)`): what `_read_back` answers, without reading the whole
    conversation twice per message (for `_orderable` conversations)."""
    rows = [m for m in new if m is not None]
    if len(rows) != len(new):  # raising rolls the transaction back, as in _read_back
        raise InternalFailure("the conversation could not be read back after writing it")
    return existing + rows  # the new messages' sequences follow every existing one's


def _integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


async def append(
    ctx: AppContext, space_uri: str, scope: Scope, key: str, messages: Sequence[Message]
) -> tuple[list[Memory], bool]:
    """Append messages; (the conversation's messages, created?). The sequence numbers are taken and the
    messages written in one writer transaction, so concurrent appends never share a sequence."""
    writes = await _writes(ctx, space_uri, messages)

    # Fresh rkeys now, so that what the write reads about them goes out with the conversation's read.
    writes = [replace(write, rkey=new_tid()) for write in writes]

    def append_in_transaction(conn):
        sent = write_batch.send_reads(conn, space_uri, [(w.author, w.rkey) for w in writes])
        # The space once (the write below takes it too), read together with the conversation (and the
        # reads just sent: one round trip on PostgreSQL).
        space, existing = store_conversations.space_and_conversation(conn, space_uri, scope, key)
        sim_id = existing[0].attrs["simId"] if existing else new_sim_id()
        numbered = [m.attrs.get("sequence") for m in existing]
        start = 1 + max((n for n in numbered if _integer(n)), default=-1)
        written: dict[str, Memory] = {}
        finish = memory_writes.send_memories(
            conn,
            space_uri,
            [
                replace(write, attrs=message_attrs(scope, key, sim_id, start + i, message))
                for i, (write, message) in enumerate(zip(writes, messages, strict=True))
            ],
            space=space,  # read just above; the conversation read wrote nothing
            written=written,
            sent=sent,
        )
        if not _orderable(existing):
            finish()
            return _read_back(conn, space_uri, scope, key), not existing

        def answer() -> tuple[list[Memory], bool]:
            records = finish()
            return _appended(existing, [written.get(r.uri) for r in records]), not existing

        # The new rows are read once the whole group's statements are answered (no wait of its own).
        return Deferred(answer)

    return await ctx.store.write_to(space_uri, append_in_transaction)


async def replace_data(
    ctx: AppContext, space_uri: str, scope: Scope, key: str, message: Message
) -> list[Memory] | None:
    """Replace a conversation's data with one message object (Sim's PUT); None when there is none."""
    [write] = await _writes(ctx, space_uri, [message])

    def replace_in_transaction(conn):
        existing = store_conversations.conversation(conn, space_uri, scope, key)
        if not existing:
            return None
        sim_id = existing[0].attrs["simId"]
        memory_writes.delete_memories(conn, space_uri, [(m.author, m.rkey) for m in existing])
        attrs = message_attrs(scope, key, sim_id, 0, message, single=True)
        memory_writes.put_memories(conn, space_uri, [replace(write, attrs=attrs)])
        return _read_back(conn, space_uri, scope, key)

    return await ctx.store.write_to(space_uri, replace_in_transaction)


async def get(ctx: AppContext, space_uri: str, scope: Scope, key: str) -> list[Memory]:
    """The conversation's messages, [] when there is none."""
    return await ctx.store.read(store_conversations.conversation, space_uri, scope, key)


async def list_all(
    ctx: AppContext, space_uri: str, scope: Scope, key_matches: Callable[[str], bool] | None, limit: int
) -> list[list[Memory]]:
    return await ctx.store.read(store_conversations.conversations, space_uri, scope, key_matches, limit)


async def delete(ctx: AppContext, space_uri: str, scope: Scope, key: str) -> int:
    """Delete the conversation; how many conversations went (0 or 1: a key names one per scope)."""

    def delete_in_transaction(conn):
        messages = store_conversations.conversation(conn, space_uri, scope, key)
        if messages:
            memory_writes.delete_memories(conn, space_uri, [(m.author, m.rkey) for m in messages])
        return 1 if messages else 0

    return await ctx.store.write_to(space_uri, delete_in_transaction)
