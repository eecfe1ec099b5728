"""`engram apikey` with several spaces: short ids shown, bind/unbind, and a key made for a shim."""

from __future__ import annotations


def test_a_key_bound_to_several_spaces_shows_short_ids_and_can_be_rebound(engram, space_name):
    first, second = space_name + "-a", space_name + "-b"
    engram("space", "create", first)
    engram("space", "create", second)
    created = engram("apikey", "create", first, "--space", second, "--json").json()
    spaces = {s["uri"].rsplit("/", 1)[1]: s["id"] for s in created["spaces"]}
    assert set(spaces) == {first, second} and all(i.isdigit() for i in spaces.values())
    assert created["space"].endswith("/" + first)

    table = engram("apikey", "list", second).out
    assert f"{spaces[first]}=" in table and f"{spaces[second]}=" in table

    after = engram("apikey", "unbind", str(created["id"]), second).out
    assert spaces[second] + "=" not in after
    listed = {k["id"]: k for k in engram("apikey", "list", "--json").json()}
    assert [s["id"] for s in listed[created["id"]]["spaces"]] == [spaces[first]]
    assert spaces[second] + "=" in engram("apikey", "bind", str(created["id"]), second).out
    refused = engram("apikey", "unbind", str(created["id"]), first)
    assert refused.code == 1 and "primary" in refused.err


def test_create_for_a_shim_prints_how_to_call_it(engram, space_name):
    engram("space", "create", space_name)
    made = engram("apikey", "create", space_name, "--scope", "read", "--for", "gptbots")
    assert made.out.strip().startswith("engram_")
    assert "/v1/vector/match" in made.err and '"group_ids": ["' in made.err
    sim = engram("apikey", "create", space_name, "--scope", "write", "--for", "sim")
    assert "/api/memory" in sim.err and '"workflowId"' in sim.err
