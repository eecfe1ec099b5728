"""Local commands through the real entry point over a real data dir: spaces, import, export, API keys."""

from __future__ import annotations

import base64
import io
import sqlite3
import tarfile

import numpy as np
import orjson
import pytest

from engram.embed import load_embedder
from engram.search.vectors import array_to_f16_bytes

EXAMPLES = __import__("pathlib").Path(__file__).resolve().parents[2] / "examples" / "memories.jsonl"


def test_every_command_has_help(engram):
    for args in (
        ["--help"],
        ["space", "create", "--help"],
        ["import", "--help"],
        ["search", "--help"],
        ["admin", "--help"],
        ["apikey", "create", "--help"],
        ["credential", "mint", "--help"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            engram(*args)
        assert exit_info.value.code == 0


def test_space_create_list_status_and_delete(engram, server, space_name):
    created = engram("space", "create", space_name)
    uri = created.out.strip()
    assert (
        created.code == 0
        and uri == f"at://did:web:127.0.0.1%3A{server.port}/space/garden.engram.space/{space_name}"
    )

    again = engram("space", "create", space_name)
    assert again.code == 1 and again.err.strip() == f"engram: SpaceExists: space already exists: {uri}"

    listed = {s["uri"]: s for s in engram("space", "list", "--json").json()}
    assert listed[uri]["config"]["model"] == "hashing-256" and listed[uri]["memories"] == 0

    status = engram("space", "status", space_name, "--json").json()
    assert status["config"]["dims"] == 256 and status["indexed"] == 0

    configured = engram(
        "space",
        "config",
        space_name,
        "--model",
        "other",
        "--digest",
        "sha256:x",
        "--dims",
        "8",
        "--next",
        "--json",
    ).json()
    assert configured["config"]["model"] == "hashing-256" and configured["config"]["next"]["model"] == "other"

    refused = engram("space", "delete", space_name)  # stdin is not a terminal: no answer means no
    assert refused.code == 1 and "not deleted" in refused.err
    assert engram("space", "delete", space_name, "--yes").code == 0
    assert uri not in {s["uri"] for s in engram("space", "list", "--json").json()}
    gone = engram("space", "status", space_name)
    assert gone.code == 1 and gone.err.startswith("engram: UnknownSpace:")


def _vector_b64(dims: int, seed: int) -> tuple[str, bytes]:
    v = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    raw = array_to_f16_bytes(v / np.linalg.norm(v))
    return base64.b64encode(raw).decode(), raw


def test_import_with_and_without_vectors_reports_bad_lines_and_is_idempotent(engram, tmp_path, space_name):
    engram("space", "create", space_name)
    hashing = load_embedder("hashing")
    model = {"model": hashing.name, "modelDigest": hashing.digest, "dims": hashing.dims}
    plain_b64, plain_raw = _vector_b64(256, 1)
    bytes_b64, bytes_raw = _vector_b64(256, 2)
    lines = [
        orjson.dumps(
            {"text": "Tea is best at 80 degrees", "tags": ["tea"], "createdAt": "2026-01-02T03:04:05Z"}
        ),
        orjson.dumps({"text": "carried vector", "embedding": {**model, "vector": plain_b64}}),
        b"{this is not json",
        orjson.dumps(
            {
                "text": "bytes vector",
                "rkey": "3kbytesvector",
                "embedding": {**model, "vector": {"$bytes": bytes_b64}},
            }
        ),
        b"",
        orjson.dumps({"tags": ["no text"]}),
        orjson.dumps(
            {
                "text": "foreign model",
                "embedding": {
                    "model": "m",
                    "modelDigest": "d",
                    "dims": 4,
                    "vector": base64.b64encode(bytes(8)).decode(),
                },
            }
        ),
        orjson.dumps({"text": "bad vector", "embedding": {**model, "vector": "***"}}),
        orjson.dumps(
            {"text": "with attrs", "attrs": {"mood": "calm"}, "source": "chat:1", "key": "my-key-1"}
        ),
    ]
    path = tmp_path / "m.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    first = engram("import", space_name, path, "--json")
    report = first.json()
    assert first.code == 0
    assert (report["created"], report["updated"], report["unchanged"], report["notIndexed"]) == (5, 0, 0, 1)
    skipped = {s["line"]: s["reason"] for s in report["skipped"]}
    assert set(skipped) == {3, 6, 8}
    assert skipped[3].startswith("not valid JSON")
    assert "text is required" in skipped[6]
    assert "not valid base64" in skipped[8]

    human = engram("import", space_name, path)
    assert "0 created, 0 updated, 5 unchanged, 3 skipped" in human.out
    assert "line 3: skipped: not valid JSON" in human.err

    export = tmp_path / "out.tar"
    assert engram("export", space_name, "--out", export).code == 0
    with tarfile.open(export) as tar:
        memories = [orjson.loads(x) for x in tar.extractfile("memories.jsonl").read().splitlines()]
    by_text = {m["text"]: m for m in memories}
    assert len(memories) == 5
    assert base64.b64decode(by_text["carried vector"]["embedding"]["vector"]["$bytes"] + "==") == plain_raw
    assert by_text["bytes vector"]["rkey"] == "3kbytesvector"
    assert base64.b64decode(by_text["bytes vector"]["embedding"]["vector"]["$bytes"] + "==") == bytes_raw
    # No vector given: embedded with the hosted model, exactly as the embedder makes it.
    tea = by_text["Tea is best at 80 degrees"]
    assert tea["embedding"]["model"] == "hashing-256" and tea["tags"] == ["tea"]
    assert by_text["with attrs"]["attrs"] == {"mood": "calm"} and by_text["with attrs"]["source"] == "chat:1"
    assert by_text["foreign model"]["embedding"]["model"] == "m"  # stored, not searchable

    status = engram("space", "status", space_name, "--json").json()
    assert (status["memories"], status["indexed"], status["skipped"]) == (5, 4, 1)


def test_a_key_is_used_once_per_import_so_a_file_with_repeats_imports_the_same_every_run(
    engram, tmp_path, space_name
):
    engram("space", "create", space_name)
    path = tmp_path / "repeats.jsonl"
    path.write_text(
        '{"text": "dup a", "key": "k1"}\n{"text": "dup b", "key": "k1"}\n{"text": "same"}\n{"text": "same"}\n'
        '{"text": "r1", "rkey": "3kbytesvector"}\n{"text": "r2", "rkey": "3kbytesvector"}\n'
    )
    runs = [engram("import", space_name, path, "--json").json() for _ in range(2)]
    for run, (created, unchanged) in zip(runs, ((3, 0), (0, 3)), strict=True):
        assert (run["created"], run["updated"], run["unchanged"]) == (created, 0, unchanged), run
        assert {s["line"]: s["reason"] for s in run["skipped"]} == {
            2: "the same key (or the same line) as line 1",
            4: "the same key (or the same line) as line 3",
            6: "the same key (or the same line) as line 5",
        }
    exported = tmp_path / "repeats.tar"
    assert engram("export", space_name, "--out", exported).code == 0
    with tarfile.open(exported) as tar:
        stored = tar.extractfile("memories.jsonl").read().splitlines()
    assert sorted(orjson.loads(line)["text"] for line in stored) == ["dup a", "r1", "same"]  # the first wins


def test_an_export_carries_import_keys_so_the_original_file_is_unchanged_in_the_copy(
    engram, tmp_path, space_name
):
    engram("space", "create", space_name)
    original = tmp_path / "original.jsonl"
    original.write_text('{"text": "no key, no rkey"}\n{"text": "keyed", "key": "k-7"}\n')
    assert engram("import", space_name, original).code == 0
    exported = tmp_path / "export.tar"
    assert engram("export", space_name, "--out", exported).code == 0
    copy = space_name + "-copy"
    engram("space", "create", copy)
    assert engram("import", copy, exported, "--json").json()["created"] == 2
    again = engram("import", copy, original, "--json").json()
    assert (again["created"], again["updated"], again["unchanged"]) == (0, 0, 2), again


def test_import_refuses_missing_file_and_unknown_space(engram, tmp_path, space_name):
    missing = engram("import", space_name, tmp_path / "nope.jsonl")
    assert missing.code == 1 and "no such file" in missing.err
    path = tmp_path / "m.jsonl"
    path.write_text('{"text": "x"}\n')
    unknown = engram("import", "no-such-space", path)
    assert unknown.code == 1 and unknown.err.startswith("engram: UnknownSpace:")
    not_tar = tmp_path / "broken.tar"
    with tarfile.open(not_tar, "w") as tar:
        info = tarfile.TarInfo("something.txt")
        tar.addfile(info, io.BytesIO(b""))
    engram("space", "create", space_name)
    wrong = engram("import", space_name, not_tar)
    assert wrong.code == 1 and "not an engram export" in wrong.err and "Traceback" not in wrong.err


def test_paths_that_cannot_be_written_or_read_are_one_line_errors(engram, tmp_path, space_name):
    engram("space", "create", space_name)
    (tmp_path / "m.jsonl").write_text('{"text": "a memory to export"}\n')
    assert engram("import", space_name, tmp_path / "m.jsonl").code == 0
    exported = tmp_path / "notes.tar"
    assert engram("export", space_name, "--out", exported).code == 0
    for args, says in (
        (("export", space_name, "--out", tmp_path / "no" / "dir" / "x.tar"), "No such file or directory"),
        (("export", space_name, "--out", tmp_path), ""),
        (("keygen", "--out", tmp_path / "m.jsonl" / "k.key"), "m.jsonl"),
    ):
        result = engram(*args)
        assert result.code == 1 and "Traceback" not in result.err, (args, result.err)
        assert result.err.startswith("engram: ") and says in result.err and len(result.err.splitlines()) == 1


def test_export_then_import_round_trips_memories_and_vectors(engram, tmp_path, space_name):
    source, copy = space_name + "-a", space_name + "-b"
    engram("space", "create", source)
    assert engram("import", source, EXAMPLES).code == 0
    first = tmp_path / "a.tar"
    engram("export", source, "--out", first)

    engram("space", "create", copy)
    moved = engram("import", copy, first, "--json").json()
    assert moved["created"] == 300 and moved["skipped"] == []
    second = tmp_path / "b.tar"
    engram("export", copy, "--out", second)

    def lines(path):
        with tarfile.open(path) as tar:
            rows = [orjson.loads(x) for x in tar.extractfile("memories.jsonl").read().splitlines()]
        return sorted(rows, key=lambda r: r["rkey"])

    a, b = lines(first), lines(second)
    assert len(a) == len(b) == 300
    assert a == b  # same authors, rkeys, texts, tags, times, CIDs and vector bytes

    again = engram("import", copy, first, "--json").json()
    assert again["unchanged"] == 300 and again["created"] == 0
    assert engram("reindex", copy).out.splitlines()[-1] == "300 of 300 memories indexed"


def test_apikey_lifecycle_stores_only_a_hash(engram, server, space_name):
    engram("space", "create", space_name)
    created = engram(
        "apikey", "create", space_name, "--scope", "read", "--scope", "write", "--label", "shim", "--json"
    )
    key = created.json()
    token = key["token"]
    assert token.startswith("engram_") and key["scopes"] == ["read", "write"] and key["label"] == "shim"

    database = next(server.data_dir.glob("*.sqlite*"))
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT key_hash FROM api_keys").fetchall()
    assert all(token not in row[0] for row in rows)

    listed = {k["id"]: k for k in engram("apikey", "list", space_name, "--json").json()}
    assert "revokedAt" not in listed[key["id"]] and "token" not in listed[key["id"]]
    assert engram("apikey", "revoke", key["id"]).code == 0
    listed = {k["id"]: k for k in engram("apikey", "list", "--json").json()}
    assert "revokedAt" in listed[key["id"]]
    again = engram("apikey", "revoke", key["id"])
    assert again.code == 1 and again.err.startswith("engram: KeyNotFound:")


def test_keygen_writes_a_private_key_file_and_credentials_mint(engram, tmp_path, space_name):
    path = tmp_path / "holder.key"
    out = engram("keygen", "--out", path, "--json").json()
    assert path.stat().st_mode & 0o777 == 0o600 and "privateKeyMultibase" not in out
    printed = engram("keygen").out
    assert printed.startswith("private key  z") and "did:key:zDn" in printed
    kept = path.read_bytes()
    refused = engram("keygen", "--out", path)
    assert refused.code == 2 and "already exists; pass --force" in refused.err and path.read_bytes() == kept
    assert engram("keygen", "--out", path, "--force").code == 0 and path.read_bytes() != kept

    engram("space", "create", space_name)
    token = engram("credential", "mint", space_name, "--holder", out["didKey"]).out.strip()
    payload = orjson.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert payload["cnf"]["kid"] == out["didKey"] and payload["sub"].endswith("/" + space_name)
    existing = tmp_path / "credential.jwt"
    existing.write_text("old")
    existing.chmod(0o644)
    assert engram("credential", "mint", space_name, "--holder", out["didKey"], "--out", existing).code == 0
    assert existing.stat().st_mode & 0o777 == 0o600 and existing.read_text().count(".") == 2
    unknown = engram("credential", "mint", "no-such-space", "--holder", out["didKey"])
    assert unknown.code == 1 and unknown.err.startswith("engram: UnknownSpace:") and not unknown.out
    bad = engram("credential", "mint", space_name, "--holder", "did:key:nope")
    assert bad.code == 1 and bad.err.startswith("engram: InvalidRequest: the holder is not a did:key")


def test_model_info(engram):
    info = engram("model", "info", "--json").json()
    assert (info["name"], info["dims"], info["backend"]) == ("hashing-256", 256, "hashing")


def test_commands_in_the_wrong_directory_make_no_data_dir(tmp_path, monkeypatch, capsys):
    from engram.cli.main import main

    missing = tmp_path / "engram-data"
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(missing))
    monkeypatch.setenv("ENGRAM_EMBEDDER", "hashing")
    for args in (["space", "list"], ["space", "status", "notes"], ["apikey", "list"], ["export", "notes"]):
        assert main(args) == 1, args
        assert "no engram data dir at" in capsys.readouterr().err and not missing.exists(), args
    assert main(["space", "create", "notes"]) == 0 and missing.is_dir()  # a command that makes one may


def test_local_commands_with_other_settings_than_the_server_say_so(engram, server, monkeypatch, space_name):
    """The server records the DID it answers as in its data dir; a command run without the server's
    ENGRAM_PORT / ENGRAM_PUBLIC_URL would derive another DID and create spaces nobody can search."""
    assert engram("space", "create", space_name).code == 0
    monkeypatch.delenv("ENGRAM_PUBLIC_URL")
    monkeypatch.setenv("ENGRAM_PORT", str(server.port + 1))
    refused = engram("space", "create", space_name + "-lost")
    assert refused.code == 1 and "is served as did:web:127.0.0.1%3A" in refused.err, refused.err
    assert "set ENGRAM_PORT / ENGRAM_PUBLIC_URL as the server has them" in refused.err
    # search asks the server for its DID, and the data dir's key is that DID's key, whatever the settings
    found = engram("search", space_name, "anything", "--url", server.url, "--json")
    assert found.code == 0, found.err
    monkeypatch.setenv("ENGRAM_PORT", str(server.port))
    monkeypatch.setenv("ENGRAM_PUBLIC_URL", server.url)
    listed = engram("space", "list", "--json").json()
    assert space_name + "-lost" not in {s["name"] for s in listed}


def test_changing_a_hosted_spaces_model_then_reindex_embeds_its_memories_again(tmp_path, monkeypatch, capsys):
    """`space config --model` says the memories are not searchable under the new model, and `reindex`
    embeds them with it (engram runs both models), each a write through the same path as any other."""
    from engram.cli.main import main

    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ENGRAM_EMBEDDER", "hashing,hashing:128")
    lines = tmp_path / "m.jsonl"
    lines.write_text("".join(f'{{"text": "memory number {n}", "tags": ["t{n}"]}}\n' for n in range(5)))
    assert main(["space", "create", "notes"]) == 0 and main(["import", "notes", str(lines)]) == 0
    capsys.readouterr()
    assert main(["space", "config", "notes", "--next", "--clear-next"]) == 2  # --next without a model
    assert "--next names the model being migrated to" in capsys.readouterr().err
    assert main(["space", "config", "notes", "--model", "hashing-128"]) == 0
    assert "5 of 5 memories carry no vector of the new model" in capsys.readouterr().err
    assert main(["reindex", "notes"]) == 0
    out = capsys.readouterr().out
    assert "embedded 5 memories" in out and "5 of 5 memories indexed" in out
    assert main(["reindex", "notes"]) == 0  # nothing left to embed: the index is only rebuilt
    again = capsys.readouterr().out
    assert "embedded" not in again and "5 of 5 memories indexed" in again
    assert main(["space", "status", "notes", "--json"]) == 0
    status = orjson.loads(capsys.readouterr().out)
    assert status["config"]["dims"] == 128 and status["skipped"] == 0, status


def test_messages_name_what_was_wrong(engram, server, tmp_path, space_name):
    engram("space", "create", space_name)
    no_scheme = engram("search", space_name, "x", "--url", f"127.0.0.1:{server.port}")
    assert no_scheme.code == 2 and "--url must be an http(s) URL" in no_scheme.err
    vector = tmp_path / "v.json"
    vector.write_text("[0.5, 0.5]")
    both = engram("search", space_name, "x", "--vector-file", vector)
    assert both.code == 2 and "not both" in both.err
    directory = engram("import", space_name, tmp_path)
    assert directory.code == 1 and "a directory, not a file" in directory.err
    garbage = engram("space", "status", "at://garbage")
    assert garbage.code == 1 and "not a space URI" in garbage.err
    admin = ("admin", "--key", server.ops_key_file, "--did", "did:plc:cliopsadmin0000000000000")
    unreachable = engram(*admin, "--remote", "http://127.0.0.1:9", "space", "list")
    assert unreachable.code == 1 and "(see --remote)" in unreachable.err, unreachable.err
    bad_remote = engram(*admin, "--remote", "notaurl", "space", "list")
    assert bad_remote.code == 2 and "--remote must be an http(s) URL" in bad_remote.err
