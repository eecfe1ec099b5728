"""Registering a synced space: validate, record it with its read-access method, store the secret 0600.

Shared by the syncer (admin procedure) and `engram space add` (the local CLI, which writes the same rows
and file; a running server picks the space up on its next poll)."""

from __future__ import annotations

import asyncio

from engram.errors import InvalidInput
from engram.identifiers import is_did, space_authority
from engram.store import synced as store_synced
from engram.sync.secrets import SecretStore

SPACE_TYPE = "garden.engram.space"


async def register_app_password_space(
    store, secrets: SecretStore, uri: str, account: str, app_password: str, pds_url: str | None = None
) -> store_synced.SyncedSpace:
    if space_authority(uri) is None or uri.split("/")[4] != SPACE_TYPE:
        raise InvalidInput(f"not a {SPACE_TYPE} space URI: {uri!r}")
    if not is_did(account):
        raise InvalidInput(f"the reading account must be a DID, got {account!r}")
    if not app_password or len(app_password) > 256:
        raise InvalidInput("an app password (1-256 characters) is required")
    if pds_url is not None and not pds_url.startswith(("https://", "http://")):
        raise InvalidInput(f"the PDS must be an http(s) URL, got {pds_url!r}")
    access = {"account": account, **({"pds": pds_url} if pds_url else {})}
    synced = await store.write(store_synced.add_synced_space, uri, "app_password", access)
    await asyncio.to_thread(secrets.save, uri, {"appPassword": app_password})  # file I/O: off the loop
    return synced
