"""Domain operations shared by the XRPC handlers, the CLI, the remote admin methods and the shims.

Nothing here knows about aiohttp requests: callers pass plain values and get plain values back; failures
are domain errors (`engram/errors.py`) carrying the lexicon's error names, which every caller renders in its
own shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..search.limits import SearchLimiter
from ..spacehost.revocations import Revocations
from ..store.hit_cache import HitCache
from .documents.service import DocumentService
from .hybrid import HybridSearch
from .members import Members
from .memories import MemoryService
from .ranking import EngramRanking
from .search import SearchService
from .spaces import SpaceService
from .text_query import TextQueries

if TYPE_CHECKING:
    from ..auth.keyring import LocalKeyring
    from ..config import Settings
    from ..embed.base import Embedder
    from ..search.manager import IndexManager
    from ..spacehost.write_notifier import WriteNotifier
    from ..store.database import Store
    from ..store.direct_reads import DirectReader
    from ..sync.syncer import Syncer
    from ..workers import WorkerPool


@dataclass
class Services:
    spaces: SpaceService
    memories: MemoryService
    search: SearchService
    hybrid: HybridSearch  # keyword and hybrid search for the REST shims (engram/service/hybrid.py)
    ranking: EngramRanking  # engram-chosen rankings: tuned fusion, newer facts first (ranking.py)
    revocations: Revocations  # space credentials engram issued, and those authorities revoked
    members: Members  # hosted spaces' members
    documents: DocumentService  # files in, chunk memories out (engram/service/documents/)

    @classmethod
    def build(
        cls,
        settings: Settings,
        *,
        store: Store,
        keyring: LocalKeyring,
        direct_reads: DirectReader,
        index: IndexManager,
        pool: WorkerPool,
        embedder: Embedder | None,
        notifier: WriteNotifier | None,
    ) -> Services:
        """The services over the parts, each given exactly the collaborators it uses."""
        s = settings
        spaces = SpaceService(
            store,
            direct_reads,
            index,
            service_did=s.service_did,
            embedder=embedder,
            notifier=notifier,
        )
        memories = MemoryService(store, spaces, embedder=embedder, pool=pool)
        search = SearchService(
            store,
            direct_reads,
            index,
            spaces,
            limiter=SearchLimiter.configured(s.search),
            text=TextQueries(s, embedder, pool),
            hit_cache=HitCache(s.hit_cache_bytes),
        )
        hybrid = HybridSearch(store, index, search)
        ranking = EngramRanking(store, hybrid)
        revocations = Revocations(store, notifier)
        return cls(
            spaces=spaces,
            memories=memories,
            search=search,
            hybrid=hybrid,
            ranking=ranking,
            revocations=revocations,
            members=Members(store, keyring, revocations),
            documents=DocumentService(store, spaces, embedder=embedder, pool=pool),
        )

    def attach_syncer(self, syncer: Syncer) -> None:
        """The server's syncer, which is built over the services and so runs after them: members' writes and
        departures reach it (docs/space-host.md#members-repos), and it drops a held credential its space's
        authority revoked."""
        self.revocations.syncer = syncer
        self.members.syncer = syncer
