"""Members' writes to a hosted space, as its space host sees them (docs/space-host.md#members-repos).

A member writes to its own repo in the space at its own PDS; that repo host tells the space host with
`notifyWrite {space, repo, repoRev, hash}` (the member's service auth). engram, as space host under the
member-list write policy, tracks the repos of members with write access: each newer rev gets a fresh
space rev, the repo is listed by listRepos, and the registered syncers are told with the space host's
`notifyWrite` (the authority's service auth). A rev not newer than the tracked one changes nothing; a rev
more than five minutes in the future is refused (`FutureRev`), as the reference space host does.

engram also indexes the members' repos of the spaces it hosts: each newer rev asks the syncer (engram/sync)
to pull that repo from the member's PDS, verified against the member's signed commit; a member that stops
being a writer has its memories dropped by the next full pass.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..store import hosted_writers as store_writers
from ..store import members as store_members
from ..store.models import Space
from ..store.tid import decode_tid

if TYPE_CHECKING:
    from ..store.database import Store
    from ..sync.syncer import Syncer
    from .write_notifier import WriteNotifier

MAX_AHEAD_MICROS = 300 * 1_000_000


async def tracks(store: Store, space_uri: str, did: str) -> bool:
    """Whether ``did``'s writes are tracked: a member with write access."""
    member = await store.read(store_members.get_member, space_uri, did)
    return member is not None and member.write


async def member_wrote(
    store: Store,
    notifier: WriteNotifier | None,
    syncer: Syncer | None,
    space: Space,
    repo: str,
    repo_rev: str,
    hash_value: Any,
) -> bool:
    """Track ``repo`` at ``repo_rev``; True when it was newer than the tracked rev (and syncers are told,
    and the server's own syncer pulls the repo)."""
    if not isinstance(hash_value, dict) or not isinstance(hash_value.get("$bytes"), str):
        raise InvalidInput("a repo host's notifyWrite must carry the repo's hash (listRepos lists it)")
    if decode_tid(repo_rev)[0] > time.time() * 1_000_000 + MAX_AHEAD_MICROS:
        raise InvalidInput(f"repoRev {repo_rev} is more than five minutes in the future", "FutureRev")
    state = await store.write(store_writers.record_write, space.uri, repo, repo_rev, hash_value["$bytes"])
    if state is None:
        return False
    if notifier is not None:
        body = {"space": space.uri, "repo": repo, "repoRev": repo_rev, "hash": hash_value,
                "spaceRev": state.space_rev}  # fmt: skip
        if state.prev_space_rev is not None:
            body["prevSpaceRev"] = state.prev_space_rev
        notifier.member_wrote(space.uri, space.authority, body)
    if syncer is not None:
        syncer.member_wrote(space.uri, repo, state.space_rev)
    return True


def writer_left(syncer: Syncer | None, space_uri: str) -> None:
    """A member is no longer tracked as a writer: the syncer's next full pass drops its memories (the CLI has
    no syncer; the server's next poll does the same)."""
    if syncer is not None:
        syncer.member_left(space_uri)
