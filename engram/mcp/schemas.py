"""The tools' answers as types: the SDK turns each tool's return annotation into its `outputSchema` (what
hosts show and validate `structuredContent` against) and checks every answer against it (docs/mcp.md#tools).
They describe exactly the dicts `operations.py` builds; a field an answer has and its type lacks fails the
call (`extra="forbid"`) rather than being dropped, so a new field cannot go missing unnoticed."""

from typing import NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic needs this one on Python < 3.12 (nested schemas)

EXACT = ConfigDict(extra="forbid")


@with_config(EXACT)
class Remembered(TypedDict):
    uri: str
    space: str | None  # the space's short id (list_spaces' `id`)
    duplicate: bool
    status: str
    indexed: bool


@with_config(EXACT)
class MemoryView(TypedDict):
    uri: str
    space: str | None
    text: str
    tags: list[str]
    source: str | None
    author: str
    createdAt: str


@with_config(EXACT)
class Replacement(TypedDict):
    uri: str  # the other memory
    basis: str  # "explicit" (the newer one names the older: remember's supersedes) or "heuristic"


@with_config(EXACT)
class ContextStep(TypedDict):
    uri: str  # the neighbouring turn this hit's score is a share of
    position: str  # "before" (the turn it answers) or "after" (the turn that answers it)
    share: float


@with_config(EXACT)
class SpeakerStep(TypedDict):
    saidBy: str | None  # attrs.speaker of the hit, someone the query does not name
    factor: float  # its score was multiplied by this


@with_config(EXACT)
class Why(TypedDict):
    similarity: float | None  # cosine in [0, 1]
    keyword: float | None  # keyword share in [0, 1]
    terms: dict[str, float]  # each matched query term and its part of the keyword share
    rule: str | None  # "restates" (ranked before what it replaces) or "superseded" (kept after its successor)
    confidence: float  # calibrated: >= 0.5 means this hit probably answers the query
    context: ContextStep | None  # hybrid: its score came from a conversation neighbour
    speaker: SpeakerStep | None  # hybrid: lowered because someone the query does not name said it


@with_config(EXACT)
class Citation(TypedDict, total=False):
    """Where a chunk of an ingested document came from (docs/documents.md#citations)."""

    documentId: str
    documentName: str
    sourceUrl: str
    page: int
    chunkIndex: int
    section: str


@with_config(EXACT)
class Hit(MemoryView):
    similarity: float | None  # cosine in [0, 1]; null for a keyword-only hit without a vector
    score: float
    supersedes: list[Replacement]  # the memories this one replaces
    supersededBy: Replacement | None  # the memory that replaces this one
    why: Why
    citation: NotRequired[Citation]  # present on a chunk of a document


@with_config(EXACT)
class Recalled(TypedDict):
    results: list[Hit]
    spaces: list[str | None]  # the spaces searched
    mode: str
    memories: int  # live memories in the spaces searched
    allowed: int  # of those, how many passed the filters
    droppedSuperseded: int  # hits `current` dropped
    empty: (
        str | None
    )  # why results is empty: no_memories, filtered_out, below_threshold, all_superseded, no_match


@with_config(EXACT)
class MemoryPage(TypedDict):
    memories: list[MemoryView]
    cursor: str | None  # null on the last page


@with_config(EXACT)
class Forgotten(TypedDict):
    uri: str
    deleted: bool


@with_config(EXACT)
class Model(TypedDict):
    name: str
    digest: str
    dims: int


@with_config(EXACT)
class SpaceView(TypedDict):
    id: str
    name: str
    uri: str
    model: Model | None
    memories: int
    read: bool
    write: bool
    default: bool


@with_config(EXACT)
class Spaces(TypedDict):
    spaces: list[SpaceView]
