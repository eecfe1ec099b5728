"""One-time links in the store, and `engram console login` writing them for the server."""

from __future__ import annotations

import asyncio
import os
import time
from urllib.parse import parse_qs, urlsplit

from engram.cli.main import main
from engram.console.login_links import LINK_TTL_S, create_link_token, redeem_link_token
from engram.store import Store, database_path
from engram.store.console_links import count_links

NOW = 1_800_000_000.0


async def test_a_link_redeems_once_and_only_its_hash_is_stored(two_stores, tmp_path):
    first, second = two_stores
    token = await create_link_token(first, NOW)
    assert token.encode() not in database_path(tmp_path).read_bytes()
    stored = await first.read(lambda conn: conn.execute("SELECT digest FROM console_links").fetchall())
    assert len(stored) == 1 and token not in stored[0][0]
    assert await redeem_link_token(second, token, NOW + 1)  # made by one process, redeemed by another
    assert not await redeem_link_token(first, token, NOW + 2)
    assert await first.read(count_links) == 0


async def test_a_link_expires(two_stores):
    first, _ = two_stores
    token = await create_link_token(first, NOW)
    assert not await redeem_link_token(first, token, NOW + LINK_TTL_S)
    other = await create_link_token(first, NOW)
    assert await redeem_link_token(first, other, NOW + LINK_TTL_S - 1)


async def test_racing_redeemers_in_two_processes_get_one_success(two_stores):
    token = await create_link_token(two_stores[0], NOW)
    outcomes = await asyncio.gather(*(redeem_link_token(s, token, NOW) for s in two_stores * 8))
    assert outcomes.count(True) == 1


async def test_expired_links_are_pruned_when_a_new_one_is_made(two_stores):
    first, _ = two_stores
    old = await create_link_token(first, NOW)
    await create_link_token(first, NOW + LINK_TTL_S + 1)
    assert await first.read(count_links) == 1
    assert not await redeem_link_token(first, old, NOW)


async def test_odd_tokens_are_refused(two_stores):
    first, _ = two_stores
    for token in ("", "short", "x" * 500, None, "../../etc/passwd" + "a" * 10):
        assert not await redeem_link_token(first, token, NOW)


async def test_engram_console_login_prints_a_link_the_server_accepts(monkeypatch, tmp_path, capsys):
    data = tmp_path / "data"
    for name in [k for k in os.environ if k.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(data))
    monkeypatch.setenv("ENGRAM_PUBLIC_URL", "https://engram.example.com")
    # no data dir yet (the wrong directory): refused, and none is made
    assert await asyncio.to_thread(main, ["console", "login"]) == 1
    assert "no engram data dir at" in capsys.readouterr().err and not data.exists()
    data.mkdir()
    assert await asyncio.to_thread(main, ["console", "login"]) == 0  # the CLI runs its own event loop
    out, err = capsys.readouterr()
    url = urlsplit(out.strip())
    assert (url.scheme, url.netloc, url.path) == ("https", "engram.example.com", "/console/login")
    assert "10 minutes" in err
    token = parse_qs(url.query)["token"][0]
    store = await Store.open(database_path(data))
    try:
        assert await redeem_link_token(store, token, time.time())
        assert not await redeem_link_token(store, token, time.time())
    finally:
        await store.close()


async def test_engram_console_logout_all_ends_every_session_in_the_store(monkeypatch, tmp_path, capsys):
    """Sessions outlive a restart (they are store rows); `logout-all` is how an operator ends them all."""
    from engram.store.console_sessions import count_sessions, start_session

    data = tmp_path / "data"
    for name in [k for k in os.environ if k.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(data))
    data.mkdir()
    store = await Store.open(database_path(data))
    try:
        now = int(time.time() * 1000)
        for n, (role, key_id) in enumerate((("operator", None), ("reader", 1), ("reader", 2))):
            await store.write(
                start_session, f"digest-{n}", role, key_id, "csrf", now, now + 3_600_000, 100, 5
            )
        assert await store.read(count_sessions) == 3
    finally:
        await store.close()
    assert await asyncio.to_thread(main, ["console", "logout-all"]) == 0
    assert capsys.readouterr().out == "ended 3 console sessions\n"
    store = await Store.open(database_path(data))
    try:
        assert await store.read(count_sessions) == 0
    finally:
        await store.close()
