"""One-time links as files under the data dir, and `engram console login` writing them for the server."""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import parse_qs, urlsplit

from engram.cli.main import main
from engram.console.login_links import LINK_TTL_S, create_link_token, links_dir, redeem_link_token

NOW = 1_800_000_000.0


def test_a_link_redeems_once_and_only_its_hash_is_on_disk(tmp_path):
    token = create_link_token(tmp_path, NOW)
    files = list(links_dir(tmp_path).iterdir())
    assert len(files) == 1 and token not in files[0].name and token not in files[0].read_text()
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert redeem_link_token(tmp_path, token, NOW + 1)
    assert not redeem_link_token(tmp_path, token, NOW + 2)
    assert list(links_dir(tmp_path).iterdir()) == []


def test_a_link_expires(tmp_path):
    token = create_link_token(tmp_path, NOW)
    assert not redeem_link_token(tmp_path, token, NOW + LINK_TTL_S)
    other = create_link_token(tmp_path, NOW)
    assert redeem_link_token(tmp_path, other, NOW + LINK_TTL_S - 1)


def test_racing_redeemers_get_one_success(tmp_path):
    token = create_link_token(tmp_path, NOW)
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda _: redeem_link_token(tmp_path, token, NOW), range(16)))
    assert outcomes.count(True) == 1


def test_expired_links_are_swept_when_a_new_one_is_made(tmp_path):
    old = create_link_token(tmp_path, NOW)
    create_link_token(tmp_path, NOW + LINK_TTL_S + 1)
    assert len(list(links_dir(tmp_path).iterdir())) == 1
    assert not redeem_link_token(tmp_path, old, NOW)


def test_odd_tokens_are_refused_without_touching_the_disk(tmp_path):
    for token in ("", "short", "x" * 500, None, "../../etc/passwd" + "a" * 10):
        assert not redeem_link_token(tmp_path, token, NOW)


def test_engram_console_login_prints_a_link_the_server_accepts(monkeypatch, tmp_path, capsys):
    data = tmp_path / "data"
    for name in [k for k in os.environ if k.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(data))
    monkeypatch.setenv("ENGRAM_PUBLIC_URL", "https://engram.example.com")
    assert main(["console", "login"]) == 0
    out, err = capsys.readouterr()
    url = urlsplit(out.strip())
    assert (url.scheme, url.netloc, url.path) == ("https", "engram.example.com", "/console/login")
    assert "10 minutes" in err
    token = parse_qs(url.query)["token"][0]
    import time

    assert redeem_link_token(data, token, time.time())
    assert not redeem_link_token(data, token, time.time())
