"""`engram search` against the running server: it signs like a real reader and the server accepts it."""

from __future__ import annotations

import base64
from pathlib import Path

import orjson
import pytest

from engram.auth.crypto_keys import PrivateKey
from engram.embed import load_embedder
from engram.embed.text import query_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memories.jsonl"
PNPM = "Dana's preferred JavaScript package manager is pnpm"


@pytest.fixture
def examples_space(engram, space_name) -> str:
    engram("space", "create", space_name)
    assert engram("import", space_name, EXAMPLES).code == 0
    return space_name


def _hits(result) -> list[dict]:
    assert result.code == 0, result.err
    return result.json()["memories"]


def test_search_by_text_embeds_locally_and_the_server_accepts_the_signature(engram, server, examples_space):
    local = _hits(
        engram(
            "search",
            examples_space,
            "javascript package manager pnpm npm",
            "--url",
            server.url,
            "--json",
            "--limit",
            "3",
        )
    )
    assert local[0]["text"].startswith(PNPM) and len(local) == 3
    remote = _hits(
        engram(
            "search",
            examples_space,
            "javascript package manager pnpm npm",
            "--url",
            server.url,
            "--json",
            "--limit",
            "3",
            "--remote-embed",
        )
    )
    assert [m["uri"] for m in remote] == [m["uri"] for m in local]
    assert [m["similarity"] for m in remote] == [m["similarity"] for m in local]
    assert (server.config_dir / "engram" / "holder.key").stat().st_mode & 0o777 == 0o600
    # Without --url: the server the same settings run (http://127.0.0.1:<ENGRAM_PORT>).
    default = _hits(
        engram("search", examples_space, "javascript package manager pnpm npm", "--json", "--limit", "3")
    )
    assert [m["uri"] for m in default] == [m["uri"] for m in local]

    table = engram(
        "search", examples_space, "javascript package manager pnpm npm", "--url", server.url, "--limit", "2"
    )
    header, rule, first = table.out.splitlines()[:3]
    assert header.split() == ["SIM", "CREATED", "TAGS", "TEXT"] and set(rule) <= {"-", " "}
    assert first.split()[1] == "2025-11-01" and "Dana's preferred JavaScript" in first


def test_search_filters_and_vector_file(engram, server, examples_space, tmp_path):
    tagged = _hits(
        engram(
            "search",
            examples_space,
            "postgres upgrade",
            "--url",
            server.url,
            "--json",
            "--tag",
            "postgres",
            "--since",
            "2026-03-01T00:00:00Z",
            "--limit",
            "50",
        )
    )
    assert tagged and all("postgres" in m["tags"] and m["createdAt"] >= "2026-03-01" for m in tagged)

    vector = load_embedder("hashing").embed([query_text("javascript package manager pnpm npm")], "query")[0]
    path = tmp_path / "q.json"
    path.write_bytes(orjson.dumps(vector.tolist()))
    by_vector = _hits(engram("search", examples_space, "--vector-file", path, "--url", server.url, "--json"))
    assert by_vector[0]["text"].startswith(PNPM)
    path.write_bytes(orjson.dumps([0.5] * 3))
    wrong = engram("search", examples_space, "--vector-file", path, "--url", server.url)
    assert wrong.code == 1 and "has 3 numbers; the space's model has 256 dimensions" in wrong.err


def test_search_with_a_credential_file_and_tampered_ones(engram, server, examples_space, tmp_path):
    holder = tmp_path / "holder.key"
    did_key = engram("keygen", "--out", holder, "--json").json()["didKey"]
    credential = tmp_path / "cred.jwt"
    assert engram("credential", "mint", examples_space, "--holder", did_key, "--out", credential).code == 0
    # --credential is used as given (the local keys are not consulted): the server verifies it.
    ok = _hits(
        engram(
            "search",
            examples_space,
            "package manager",
            "--url",
            server.url,
            "--json",
            "--key",
            holder,
            "--credential",
            credential,
        )
    )
    assert ok

    header, payload, signature = credential.read_text().strip().split(".")
    claims = orjson.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["exp"] += 600  # a longer life than the authority granted
    forged = base64.urlsafe_b64encode(orjson.dumps(claims)).decode().rstrip("=")
    flipped = signature[:-2] + ("AA" if not signature.endswith("AA") else "BB")
    for tampered, error in (
        (f"{header}.{forged}.{signature}", "engram: InvalidToken: "),
        (f"{header}.{payload}.{flipped}", "engram: InvalidToken: "),
        (f"{header}.{payload[:-4]}.{signature}", "is not a valid space credential"),
        ("not a credential at all", "is not a valid space credential"),
    ):
        credential.write_text(tampered)
        refused = engram(
            "search",
            examples_space,
            "package manager",
            "--url",
            server.url,
            "--key",
            holder,
            "--credential",
            credential,
        )
        assert refused.code == 1 and error in refused.err and "Traceback" not in refused.err, refused.err
        assert refused.out == ""

    other = tmp_path / "other.key"
    engram("keygen", "--out", other)
    credential.write_text(f"{header}.{payload}.{signature}")
    wrong_holder = engram(
        "search", examples_space, "x", "--url", server.url, "--key", other, "--credential", credential
    )
    assert wrong_holder.code == 1 and "bound to another holder key" in wrong_holder.err


def test_search_errors_are_readable(engram, server, tmp_path):
    unknown = engram("search", "no-such-space", "anything", "--url", server.url)
    assert unknown.code == 1 and unknown.err.startswith("engram: UnknownSpace: ")
    foreign = engram(
        "search",
        "at://did:plc:someoneelse000000000000/space/garden.engram.space/x",
        "anything",
        "--url",
        server.url,
    )
    assert foreign.code == 1 and "--credential" in foreign.err
    down = engram("search", "x", "anything", "--url", "http://127.0.0.1:9")
    assert down.code == 1 and "cannot reach http://127.0.0.1:9" in down.err
    bad_key = tmp_path / "bad.key"
    bad_key.write_text("nonsense")
    assert "not an engram key file" in engram("search", "x", "q", "--url", server.url, "--key", bad_key).err
    k256 = tmp_path / "k.key"
    k256.write_text(PrivateKey.generate("ES256K").to_multibase())
    assert "holder keys must be P-256" in engram("search", "x", "q", "--url", server.url, "--key", k256).err


def test_a_space_owned_by_another_did_is_searched_with_that_dids_credentials(engram, server, space_name):
    # The server fixture's operator DID has its key in the data dir: engram resolves the DID from it, and
    # the CLI mints credentials as that DID (the authority), not as engram.
    created = engram("space", "create", space_name, "--authority", "did:plc:cliopsadmin0000000000000")
    uri = created.out.strip()
    assert uri == f"at://did:plc:cliopsadmin0000000000000/space/garden.engram.space/{space_name}"
    assert engram("import", uri, EXAMPLES).code == 0
    hits = _hits(engram("search", uri, "javascript package manager pnpm npm", "--url", server.url, "--json"))
    assert hits[0]["text"].startswith(PNPM)
    assert hits[0]["author"] == "did:plc:cliopsadmin0000000000000"
    # A name alone means a space under engram's own DID: this one is not.
    assert engram("search", space_name, "x", "--url", server.url).err.startswith("engram: UnknownSpace:")
