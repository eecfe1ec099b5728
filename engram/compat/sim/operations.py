"""Sim memory operations over the key's primary space: append a message, read, list and delete
conversations. A workflow's conversations live in the key's primary space; a workflowId is a namespace
inside it, so a key can never reach a workflow in a space it is not bound to."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...errors import NotFound
from ...service.embedding import embed_documents, hosts_model
from ...store import Memory, MemoryWrite
from ...store import conversations as store_conversations
from ...store import memories as store_memories
from .translate import AddRequest, message_attrs, new_memory_id

if TYPE_CHECKING:
    from ...context import AppContext


async def append(ctx: AppContext, space_uri: str, request: AddRequest) -> tuple[list[Memory], bool]:
    """Append one message; (the conversation's messages, created?). The sequence number is taken and the
    message written in one writer transaction, so concurrent appends never share a sequence."""
    space = await ctx.services.spaces.require(space_uri)
    write = MemoryWrite(author=space.authority, text=request.content)
    if hosts_model(ctx.embedder, space):
        [embedding] = await embed_documents(ctx.embedder, ctx.pool, space, [request.content], [()])
        write = replace(write, embedding=embedding)

    def append_in_transaction(conn):
        existing = store_conversations.conversation(conn, space_uri, request.workflow_id, request.key)
        sim_id = existing[0].attrs["simId"] if existing else new_memory_id()
        sequence = existing[-1].attrs["sequence"] + 1 if existing else 0
        store_memories.put_memories(
            conn, space_uri, [replace(write, attrs=message_attrs(request, sim_id, sequence))]
        )
        messages = store_conversations.conversation(conn, space_uri, request.workflow_id, request.key)
        return messages, not existing

    return await ctx.store.write(append_in_transaction)


async def get(ctx: AppContext, space_uri: str, workflow_id: str, sim_id: str) -> list[Memory]:
    messages = await ctx.store.read(store_conversations.conversation_by_id, space_uri, workflow_id, sim_id)
    if not messages:
        raise NotFound("Memory not found")
    return messages


async def list_all(ctx: AppContext, space_uri: str, workflow_id: str, query: str | None, limit: int):
    return await ctx.store.read(store_conversations.conversations, space_uri, workflow_id, query, limit)


async def delete(ctx: AppContext, space_uri: str, workflow_id: str, sim_id: str) -> None:
    def delete_in_transaction(conn):
        messages = store_conversations.conversation_by_id(conn, space_uri, workflow_id, sim_id)
        if not messages:
            raise NotFound("Memory not found")
        store_memories.delete_memories(conn, space_uri, [(m.author, m.rkey) for m in messages])

    await ctx.store.write(delete_in_transaction)
