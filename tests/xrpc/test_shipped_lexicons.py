"""The lexicons engram ships: they load, the atproto SDK parses them, and real values validate."""

import base64
import hashlib
from pathlib import Path

import pytest
from atproto_lexicon.parser import lexicon_parse
from multidict import MultiDict, MultiDictProxy

from engram.errors import InvalidInput
from engram.xrpc.formats import check_nsid
from engram.xrpc.lexicons import LexiconRegistry
from engram.xrpc.validate import (
    ValidationError,
    decode_params,
    precompile,
    validate_input,
    validate_output,
    validate_value,
)

REPO = Path(__file__).resolve().parents[2]
LEXICONS = REPO / "lexicons"
SEARCH = LEXICONS / "garden" / "engram" / "searchMemories.json"
# The user's lexicon, shipped verbatim: sha256 of ../shared/lexicons/garden.engram.searchMemories.json.
SEARCH_SHA256 = "f16a95b043907cedf1523ad959afd6c035826fbf73f8dfec3fb4cc691bdbe1e8"
SHARED_SEARCH = REPO.parent / "shared" / "lexicons" / "garden.engram.searchMemories.json"
REGISTRY = LexiconRegistry.load(LEXICONS)
FILES = sorted(LEXICONS.rglob("*.json"))

SPACE = "at://did:plc:ewvi7nxzyoun6zhxrhs64oiz/space/garden.engram.space/default"
AUTHOR = "did:plc:z72i7hdynmk6r22z27h6tvur"
VIEW = {
    "uri": f"{SPACE}/{AUTHOR}/garden.engram.memory/3jui7kd54zh2y",
    "cid": "bafyreiclp443lavogvhj3d2ob2cxbfuscni2k5jk7bebjzg7khl3esabwq",
    "author": AUTHOR,
    "text": "The deploy key lives in the team vault, not in CI secrets.",
    "tags": ["ops", "secrets"],
    "createdAt": "2026-11-01T09:30:00.000Z",
    "indexedAt": "2026-11-01T09:30:02.512Z",
}
MODEL = {
    "model": "all-MiniLM-L6-v2",
    "modelDigest": "sha256:53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "dims": 384,
}


def test_searchmemories_is_the_users_lexicon_byte_for_byte():
    assert hashlib.sha256(SEARCH.read_bytes()).hexdigest() == SEARCH_SHA256
    if SHARED_SEARCH.exists():
        assert SEARCH.read_bytes() == SHARED_SEARCH.read_bytes()


def test_the_registry_serves_every_method():
    assert sorted(REGISTRY.methods()) == [
        "com.atproto.simplespace.addMember",
        "com.atproto.simplespace.createSpace",
        "com.atproto.simplespace.deleteSpace",
        "com.atproto.simplespace.getSpace",
        "com.atproto.simplespace.listMembers",
        "com.atproto.simplespace.putMember",
        "com.atproto.simplespace.removeMember",
        "com.atproto.simplespace.updateSpace",
        "com.atproto.space.getLatestCommit",
        "com.atproto.space.getRecord",
        "com.atproto.space.getRepo",
        "com.atproto.space.getSpaceCredential",
        "com.atproto.space.listRecords",
        "com.atproto.space.listRepoOps",
        "com.atproto.space.listRepos",
        "com.atproto.space.listSpaces",
        "com.atproto.space.notifyCredentialRevoked",
        "com.atproto.space.notifySpaceDeleted",
        "com.atproto.space.notifyWrite",
        "com.atproto.space.registerNotify",
        "com.atproto.space.unregisterNotify",
        "garden.engram.admin.addSyncedSpace",
        "garden.engram.admin.configureSpace",
        "garden.engram.admin.createApiKey",
        "garden.engram.admin.createSpace",
        "garden.engram.admin.deleteDocument",
        "garden.engram.admin.deleteSpace",
        "garden.engram.admin.getDocument",
        "garden.engram.admin.grantMember",
        "garden.engram.admin.importMemories",
        "garden.engram.admin.ingestDocument",
        "garden.engram.admin.listApiKeys",
        "garden.engram.admin.listDocuments",
        "garden.engram.admin.listMembers",
        "garden.engram.admin.listSpaces",
        "garden.engram.admin.reindexSpace",
        "garden.engram.admin.revokeApiKey",
        "garden.engram.admin.revokeMember",
        "garden.engram.describeService",
        "garden.engram.exportSpace",
        "garden.engram.getMemory",
        "garden.engram.getMemoryGraph",
        "garden.engram.getSpaceStatus",
        "garden.engram.listMemories",
        "garden.engram.recallMemories",
        "garden.engram.searchMemories",
        "garden.engram.warmSpace",
    ]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(LEXICONS)) for p in FILES])
def test_every_file_parses_with_the_atproto_sdk_models(path):
    doc = REGISTRY.get(".".join(path.relative_to(LEXICONS).with_suffix("").parts))
    # The SDK's models predate spaces and have no "space" definition type: those defs get the
    # equivalent check below and the rest of the document goes through the SDK.
    sdk_defs = {name: d for name, d in doc["defs"].items() if d["type"] != "space"}
    parsed = lexicon_parse({**doc, "defs": sdk_defs})
    assert parsed.id == doc["id"] and set(parsed.defs) == set(sdk_defs)


def test_the_space_type_declares_its_collections():
    main = REGISTRY.get("garden.engram.space")["defs"]["main"]
    assert set(main) <= {"type", "description", "name", "key", "collections"}
    assert main["collections"] == ["garden.engram.memory", "garden.engram.config"]
    for nsid in main["collections"]:
        assert check_nsid(nsid) is None
        assert REGISTRY.get(nsid)["defs"]["main"]["type"] == "record"


@pytest.mark.parametrize("nsid", sorted(REGISTRY.methods()))
def test_methods_say_how_they_authenticate(nsid):
    description = REGISTRY.method(nsid).description
    if nsid == "garden.engram.describeService":
        assert "no authentication" in description
    elif nsid == "com.atproto.space.getSpaceCredential":  # engram as space host (docs/space-host.md)
        assert "Bearer <delegation token>" in description and "keyid" in description
    elif nsid == "com.atproto.simplespace.getSpace":  # a member's read of the space host
        assert "space credential presented with an atproto-space HTTP message signature" in description
    elif nsid.startswith("com.atproto.simplespace.") or nsid == "com.atproto.space.listSpaces":
        assert "service-auth JWT from the" in description and "lxm this method" in description
    elif nsid.startswith("com.atproto.space.") and not nsid.startswith("com.atproto.space.notify"):
        assert "space credential presented with an atproto-space HTTP message signature" in description
    elif nsid.startswith("com.atproto.space."):
        assert "service-auth JWT" in description
    elif nsid.startswith("garden.engram.admin."):
        assert "Requires an admin signature" in description
    elif nsid != "garden.engram.searchMemories":
        assert "Requires the same authentication as searchMemories" in description


def test_search_params_decode_with_a_real_vector():
    vector = base64.urlsafe_b64encode(bytes(768)).decode().rstrip("=")
    query = MultiDictProxy(
        MultiDict(
            [
                ("space", SPACE),
                ("vector", vector),
                ("model", MODEL["model"]),
                ("modelDigest", MODEL["modelDigest"]),
                ("tags", "ops"),
                ("tags", "secrets"),
                ("since", "2026-01-01T00:00:00Z"),
                ("author", AUTHOR),
            ]
        )
    )
    out = decode_params(REGISTRY.method("garden.engram.searchMemories"), query, REGISTRY)
    assert out["limit"] == 10 and out["vector"] == vector and out["tags"] == ["ops", "secrets"]
    with pytest.raises(InvalidInput, match='Invalid parameter "limit": must be at most 50'):
        decode_params(
            REGISTRY.method("garden.engram.searchMemories"), {"space": SPACE, "limit": "51"}, REGISTRY
        )


def test_graph_params_defaults():
    out = decode_params(REGISTRY.method("garden.engram.getMemoryGraph"), {"space": SPACE}, REGISTRY)
    assert out == {"space": SPACE, "limit": 200, "neighbors": 3, "minSimilarity": "0.4"}


def test_realistic_outputs_validate():
    validate_output(
        REGISTRY.method("garden.engram.searchMemories"),
        {
            "memories": [{**VIEW, "similarity": 873, "source": "https://example.com/runbook"}],
            "approximate": True,
        },
        REGISTRY,
    )
    validate_output(REGISTRY.method("garden.engram.getMemory"), {"memory": VIEW}, REGISTRY)
    validate_output(
        REGISTRY.method("garden.engram.listMemories"),
        {"memories": [VIEW], "cursor": "3jui7kd54zh2y"},
        REGISTRY,
    )
    validate_output(
        REGISTRY.method("garden.engram.getSpaceStatus"),
        {
            "memories": 10,
            "skipped": [{"author": AUTHOR, "count": 2}],
            "config": {
                **MODEL,
                "queryPrefix": "search_query: ",
                "createdAt": "2026-11-01T09:00:00Z",
                "next": MODEL,
            },
            "active": MODEL,
            "building": MODEL,
            "buildingMemories": 4,
        },
        REGISTRY,
    )
    validate_output(
        REGISTRY.method("garden.engram.getMemoryGraph"),
        {"nodes": [VIEW, VIEW], "edges": [{"a": 0, "b": 1, "similarity": 640}]},
        REGISTRY,
    )
    validate_output(
        REGISTRY.method("garden.engram.describeService"),
        {"did": "did:web:engram.example.com", "registration": "closed", "textSearch": MODEL},
        REGISTRY,
    )
    validate_output(REGISTRY.method("garden.engram.warmSpace"), {}, REGISTRY)
    validate_output(REGISTRY.method("com.atproto.space.notifyWrite"), None, REGISTRY)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"similarity": 1001}, "output.memories[0].similarity"),
        ({"uri": "at://did:plc:x/garden.engram.memory/3jui7kd54zh2y/extra"}, "output.memories[0].uri"),
        ({"cid": "not-a-cid"}, "output.memories[0].cid"),
        ({"createdAt": "2026-11-01"}, "output.memories[0].createdAt"),
        ({"tags": None}, "output.memories[0].tags"),
    ],
)
def test_off_lexicon_search_output_is_caught(change, path):
    with pytest.raises(ValidationError) as info:
        validate_output(
            REGISTRY.method("garden.engram.searchMemories"), {"memories": [{**VIEW, **change}]}, REGISTRY
        )
    assert info.value.path == path


def test_notify_write_input():
    method = REGISTRY.method("com.atproto.space.notifyWrite")
    body = (
        b'{"space": "%s", "repo": "%s", "repoRev": "3jzfcijpj2z2a", "hash": {"$bytes": "%s"}, "spaceRev": "3jzfcijpj2z2b"}'
        % (SPACE.encode(), AUTHOR.encode(), base64.b64encode(bytes(32)).rstrip(b"="))
    )
    assert validate_input(method, "application/json", body, REGISTRY)["repoRev"] == "3jzfcijpj2z2a"
    with pytest.raises(InvalidInput, match="input.spaceRev: must be a TID"):
        validate_input(method, "application/json", body.replace(b"3jzfcijpj2z2b", b"rev-1"), REGISTRY)


def _memory(**change):
    vector = {"$bytes": base64.b64encode(bytes(768)).decode()}
    return {
        "text": "Remember to rotate the keys.",
        "tags": ["ops"],
        "createdAt": "2026-11-01T09:30:00Z",
        "embedding": {**MODEL, "encoding": "f16le", "vector": vector},
        **change,
    }


def test_memory_records_validate_against_the_record_lexicon():
    schema = {"type": "ref", "ref": "garden.engram.memory"}
    validate_value(schema, _memory(), REGISTRY, "garden.engram.memory", "record")
    validate_value(
        schema, _memory(text="🧠" * 7500), REGISTRY, "garden.engram.memory", "record"
    )  # 30000 bytes
    for change, path in [
        ({"text": "🧠" * 7501}, "record.text"),
        ({"text": "a" * 10001}, "record.text"),
        ({"tags": ["t"] * 17}, "record.tags"),
        ({"tags": ["é" * 65]}, "record.tags[0]"),
        ({"embedding": {**MODEL, "encoding": "f16le"}}, "record.embedding.vector"),
        (
            {"embedding": {**MODEL, "dims": 0, "encoding": "f16le", "vector": {"$bytes": ""}}},
            "record.embedding.dims",
        ),
        ({"nextEmbedding": {"model": "x"}}, "record.nextEmbedding.modelDigest"),
    ]:
        with pytest.raises(ValidationError) as info:
            validate_value(schema, _memory(**change), REGISTRY, "garden.engram.memory", "record")
        assert info.value.path == path


def test_precompile_builds_every_method_check_up_front():
    registry = LexiconRegistry.load(LEXICONS)
    precompile(registry)
    for method in registry.methods().values():
        assert {"params", "input", "output"} <= set(method.compiled)
    assert "garden.engram.defs#memoryView" in registry.compiled_defs
