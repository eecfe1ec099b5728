"""`engram space config` (local) and `engram admin space config` (remote, configureSpace) merge a change
into a space's config the same way: both go through SpaceService.configure."""

from __future__ import annotations

import pytest

OPS_DID = "did:plc:cliopsadmin0000000000000"  # the server fixture's admin DID (conftest.py)

OTHER = ("--model", "other", "--digest", "sha256:other", "--dims", "8")
THIRD = ("--model", "third", "--digest", "sha256:third", "--dims", "4")


def _config(engram, name: str) -> dict:
    return engram("space", "status", name, "--json").json()["config"]


@pytest.mark.parametrize("path", ["local", "remote"])
def test_config_merges_alike_locally_and_remotely(engram, server, space_name, path):
    name = f"{space_name}-{path}"
    prefix = (
        ()
        if path == "local"
        else ("admin", "--remote", server.url, "--key", server.ops_key_file, "--did", OPS_DID)
    )

    def config(*flags):
        result = engram(*prefix, "space", "config", name, *flags)
        assert result.code == 0, result.err
        return _config(engram, name)

    assert engram("space", "create", name).code == 0
    start = _config(engram, name)
    assert start["model"] == "hashing-256" and "next" not in start

    # --next sets the migration target and keeps the active model.
    after = config(*OTHER, "--next", "--document-prefix", "doc: ")
    assert (after["model"], after["next"]["model"], after["documentPrefix"]) == (
        "hashing-256",
        "other",
        "doc: ",
    )

    # A prefix alone keeps the models.
    after = config("--query-prefix", "q: ")
    assert (after["model"], after["next"]["model"], after["queryPrefix"]) == ("hashing-256", "other", "q: ")

    # --clear-next with --model switches the active model and drops the migration (it used to ignore the
    # model locally and apply it remotely).
    after = config(*THIRD, "--clear-next")
    assert after["model"] == "third" and after["dims"] == 4 and "next" not in after
    assert (after["documentPrefix"], after["queryPrefix"]) == ("doc: ", "q: ")  # untouched fields kept

    # --next and --clear-next together are a contradiction, refused alike.
    refused = engram(*prefix, "space", "config", name, *OTHER, "--next", "--clear-next")
    assert refused.code == 1 and refused.err.startswith("engram: InvalidRequest: give next or clearNext")
    assert _config(engram, name) == after
