"""`engram serve` refuses a port that is already served (engram/serving/port_check.py): the serving
processes share their port through SO_REUSEPORT, which would let a second engram join it silently."""

from __future__ import annotations

import socket

from engram.cli.main import main
from engram.serving.port_check import port_in_use


def _listener(reuse_port: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def test_a_port_someone_listens_on_is_in_use_with_or_without_so_reuseport():
    for reuse_port in (True, False):
        sock = _listener(reuse_port)
        port = sock.getsockname()[1]
        assert port_in_use("127.0.0.1", port)
        sock.close()
        assert not port_in_use("127.0.0.1", port)
    assert not port_in_use("127.0.0.1", 0)


def test_engram_serve_on_a_served_port_exits_with_one_line(tmp_path, monkeypatch, capsys):
    sock = _listener(reuse_port=True)  # as a running engram's serving processes hold it
    port = sock.getsockname()[1]
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ENGRAM_EMBEDDER", "hashing")
    monkeypatch.setenv("ENGRAM_HOST", "127.0.0.1")
    try:
        assert main(["serve", "--port", str(port)]) == 2
    finally:
        sock.close()
    err = capsys.readouterr().err
    assert err == f"engram: port {port} on 127.0.0.1 is already in use (another engram serve?)\n"
    assert not (tmp_path / "data").exists()  # refused before anything was created
