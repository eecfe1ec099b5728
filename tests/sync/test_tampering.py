"""An incremental pull that does not verify is rejected and replaced by a verified full export."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest
from support.sync import add_space, has_text, memory_record, notify, rkey, until


def metric(engram, name: str) -> float:
    value = engram.ctx.metrics.registry.get_sample_value(name)
    return value or 0.0


@pytest.mark.parametrize(
    "mode",
    [
        "op",  # an op that does not add up to the signed commit
        "sig",  # a commit whose signature is not the author's
        "cid",  # a record value that does not match its CID
    ],
)
async def test_tampered_incremental_is_rejected_then_full_export_verifies(engram, network, mode):
    await add_space(engram, network)
    alice = network.add_member()
    await notify(
        engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("first", 1))
    )
    await until(lambda: has_text(engram, network, "first"), "first write indexed (full export)")
    exports = network.pds.calls["getRepo"]

    network.tamper[alice.did] = mode
    await notify(
        engram, network, network.put(alice, "garden.engram.memory", rkey(), memory_record("second", 2))
    )
    await until(lambda: has_text(engram, network, "second"), "second write indexed after the fallback")
    assert network.pds.calls["getRepo"] == exports + 1  # the tampered pull was replaced by an export
    assert metric(engram, "engram_sync_verification_failures_total") == 1
    assert metric(engram, "engram_sync_fallbacks_total") == 1
    assert not await has_text(engram, network, "second (altered)")  # nothing from the tampered pull landed
    assert b"engram_sync_fallbacks_total 1.0" in generate_latest(engram.ctx.metrics.registry)


async def test_a_repo_whose_export_does_not_verify_is_backed_off_and_reported(engram, network):
    from support.sync import status

    await add_space(engram, network)
    mallory = network.add_member()
    await notify(
        engram, network, network.put(mallory, "garden.engram.memory", rkey(), memory_record("forged", 1))
    )
    await until(lambda: has_text(engram, network, "forged"), "indexed")
    # mallory's PDS now signs with a key that is not in her DID document: incremental and export both fail
    from engram.auth.crypto_keys import PrivateKey

    mallory.key = PrivateKey.generate("ES256K")
    await notify(
        engram, network, network.put(mallory, "garden.engram.memory", rkey(), memory_record("forged 2", 2))
    )

    async def reported():
        code, body = await status(engram, network, engram.ctx.settings)
        assert code == 200, body
        repo = {r["did"]: r for r in body["sync"]["repos"]}[mallory.did]
        return repo["failures"] >= 1 and "retryAfter" in repo and "signature" in repo.get("lastError", "")

    await until(reported, "failure visible in getSpaceStatus")
    assert not await has_text(engram, network, "forged 2")
    assert await has_text(engram, network, "forged")  # the verified state stays
