"""`engram space grant|revoke|members`, locally and through `engram admin` (garden.engram.admin.*Member)."""

from __future__ import annotations

MEMBER = "did:plc:memberaaaaaaaaaaaaaaaaaa"
OTHER = "did:plc:memberbbbbbbbbbbbbbbbbbb"


def test_grant_list_and_revoke_members_locally(engram, space_name):
    assert engram("space", "create", space_name).code == 0
    granted = engram("space", "grant", space_name, MEMBER, "--json")
    assert granted.code == 0, granted.err
    assert granted.json()["did"] == MEMBER and granted.json()["read"] and not granted.json()["write"]
    assert engram("space", "grant", space_name, OTHER, "--write").code == 0

    listed = engram("space", "members", space_name, "--json").json()
    assert [(m["did"], m["read"], m["write"]) for m in listed] == [(MEMBER, True, False), (OTHER, True, True)]
    assert [m["did"] for m in engram("space", "members", space_name, OTHER, "--json").json()] == [OTHER]
    table = engram("space", "members", space_name).out
    assert MEMBER in table and "read+write" in table

    assert "revoked" in engram("space", "revoke", space_name, MEMBER).out
    assert "was not a member" in engram("space", "revoke", space_name, MEMBER).out
    assert [m["did"] for m in engram("space", "members", space_name, "--json").json()] == [OTHER]


def test_bad_grants_are_refused_with_a_reason(engram, space_name):
    assert engram("space", "create", space_name).code == 0
    bad = engram("space", "grant", space_name, "not-a-did")
    assert bad.code != 0 and "DID" in bad.err
    missing = engram("space", "grant", space_name + "-nope", MEMBER)
    assert missing.code != 0 and "unknown space" in missing.err


def test_members_through_remote_admin(engram, server, space_name):
    admin = (
        "admin",
        "--remote",
        server.url,
        "--key",
        server.ops_key_file,
        "--did",
        "did:plc:cliopsadmin0000000000000",
    )
    assert engram("space", "create", space_name).code == 0
    out = engram(*admin, "--json", "space", "grant", space_name, MEMBER, "--write")
    assert out.code == 0, out.err
    assert out.json()["member"]["write"] is True
    listed = engram(*admin, "--json", "space", "members", space_name).json()["members"]
    assert [m["did"] for m in listed] == [MEMBER]
    assert engram(*admin, "--json", "space", "revoke", space_name, MEMBER).json() == {"revoked": True}
    assert engram(*admin, "--json", "space", "members", space_name).json() == {"members": []}
