"""The tools' answers as types: the SDK turns each tool's return annotation into its `outputSchema` (what
hosts show and validate `structuredContent` against) and checks every answer against it (docs/mcp.md#tools).
They describe exactly the dicts `operations.py` builds."""

# typing_extensions' TypedDict: pydantic needs it on Python < 3.12 to build the schema of nested ones
from typing_extensions import TypedDict


class Remembered(TypedDict):
    uri: str
    space: str | None  # the space's short id (list_spaces' `id`)
    duplicate: bool
    status: str
    indexed: bool


class MemoryView(TypedDict):
    uri: str
    space: str | None
    text: str
    tags: list[str]
    source: str | None
    author: str
    createdAt: str


class Hit(MemoryView):
    similarity: float | None  # cosine in [0, 1]; null for a keyword-only hit without a vector
    score: float


class Recalled(TypedDict):
    results: list[Hit]
    spaces: list[str | None]  # the spaces searched
    mode: str


class MemoryPage(TypedDict):
    memories: list[MemoryView]
    cursor: str | None  # null on the last page


class Forgotten(TypedDict):
    uri: str
    deleted: bool


class Model(TypedDict):
    name: str
    digest: str
    dims: int


class SpaceView(TypedDict):
    id: str
    name: str
    uri: str
    model: Model | None
    memories: int
    read: bool
    write: bool
    default: bool


class Spaces(TypedDict):
    spaces: list[SpaceView]
