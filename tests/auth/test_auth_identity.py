"""engram's own key file and operator keys under <data_dir>/keys."""

import stat

import pytest

from engram.auth.crypto_keys import KeyFormatError, PrivateKey
from engram.auth.identity import (
    build_keyring,
    keys_dir,
    load_operator_keys,
    load_or_create_service_key,
    operator_key_path,
    save_operator_key,
)


def test_service_key_is_created_once_with_private_permissions(tmp_path):
    key = load_or_create_service_key(tmp_path)
    path = tmp_path / "keys" / "service.key"
    assert key.alg == "ES256"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    assert load_or_create_service_key(tmp_path).public_key == key.public_key
    assert [p.name for p in (tmp_path / "keys").iterdir()] == ["service.key"]  # no temp files left
    assert key.public_key.multibase.startswith("zDn")


def test_secp256k1_service_key_on_request(tmp_path):
    assert load_or_create_service_key(tmp_path, alg="ES256K").alg == "ES256K"
    assert load_or_create_service_key(tmp_path).alg == "ES256K"  # the file decides once it exists


def test_configured_multibase_key_wins_and_writes_nothing(tmp_path):
    configured = PrivateKey.generate("ES256K")
    key = load_or_create_service_key(tmp_path, configured.to_multibase())
    assert key.public_key == configured.public_key
    assert not (tmp_path / "keys" / "service.key").exists()
    with pytest.raises(KeyFormatError):
        load_or_create_service_key(tmp_path, "zNotAKey")


def test_corrupt_key_file_is_a_clear_error(tmp_path):
    keys_dir(tmp_path)
    (tmp_path / "keys" / "service.key").write_text("garbage")
    with pytest.raises(KeyFormatError, match="service.key"):
        load_or_create_service_key(tmp_path)


def test_operator_keys_round_trip_into_the_keyring(tmp_path):
    service = load_or_create_service_key(tmp_path)
    op_did, op_key = "did:plc:" + "q" * 24, PrivateKey.generate("ES256K")
    path = save_operator_key(tmp_path, op_did, op_key)
    assert path == operator_key_path(tmp_path, op_did) and path.name == "did_plc_" + "q" * 24 + ".key"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = load_operator_keys(tmp_path)
    assert list(loaded) == [op_did] and loaded[op_did].public_key == op_key.public_key
    keyring = build_keyring("did:web:engram.example.com", service, loaded, "https://engram.example.com")
    doc = keyring.document("did:web:engram.example.com")
    assert doc.key("#atproto") == service.public_key
    assert doc.service("#atproto_space_syncer").endpoint == "https://engram.example.com"
    assert keyring.document(op_did).key("#atproto") == op_key.public_key
    assert keyring.private_key(op_did) is loaded[op_did]
