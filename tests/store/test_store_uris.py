import pytest

from engram.store.uris import memory_uri, parse_memory_uri, parse_space_uri, space_uri

SPACE = "at://did:plc:authority1/space/garden.engram.space/main"


def test_space_and_memory_uris_round_trip():
    assert space_uri("did:plc:authority1", "main") == SPACE
    assert parse_space_uri(SPACE) == ("did:plc:authority1", "main")
    uri = memory_uri(SPACE, "did:web:alice.example", "3jzfcijpj2z2a")
    assert uri == f"{SPACE}/did:web:alice.example/garden.engram.memory/3jzfcijpj2z2a"
    assert parse_memory_uri(uri) == (SPACE, "did:web:alice.example", "3jzfcijpj2z2a")


@pytest.mark.parametrize(
    "bad",
    [
        SPACE + "/",
        SPACE + "?x=1",
        SPACE + "#f",
        "at://alice.example/space/garden.engram.space/main",
        "at://did:plc:a/space/com.example.space/main",
        "at://did:plc:a/space/garden.engram.space/..",
        "https://did:plc:a/space/garden.engram.space/main",
        "",
        None,
    ],
)
def test_non_canonical_space_uris_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_space_uri(bad)


@pytest.mark.parametrize(
    "bad",
    [
        SPACE,
        f"{SPACE}/alice/garden.engram.memory/3jzfcijpj2z2a",
        f"{SPACE}/did:plc:a/app.bsky.post/3jzfcijpj2z2a",
        "at://x/space/garden.engram.space/main/did:plc:a/garden.engram.memory/3jzfcijpj2z2a",
        42,
    ],
)
def test_bad_memory_uris_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_memory_uri(bad)
