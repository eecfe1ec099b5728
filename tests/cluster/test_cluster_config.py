"""Cluster settings: on only with a PostgreSQL store and a node URL; the node id and timeouts are checked."""

import pytest

from engram.config import ConfigError, read_env

PG = "postgresql://engram@127.0.0.1:5432/engram"


def test_cluster_mode_needs_both_a_postgresql_store_and_a_node_url():
    assert not read_env({}).cluster
    assert not read_env({"ENGRAM_DATABASE_URL": PG}).cluster
    assert not read_env({"ENGRAM_NODE_URL": "http://10.0.0.5:8080"}).cluster  # SQLite: one node, as before
    settings = read_env({"ENGRAM_DATABASE_URL": PG, "ENGRAM_NODE_URL": "http://10.0.0.5:8080/"})
    assert settings.cluster
    assert (settings.node_url, settings.node_id) == ("http://10.0.0.5:8080", "10.0.0.5:8080")


def test_the_node_id_defaults_from_the_url_and_can_be_named():
    assert read_env({"ENGRAM_NODE_URL": "https://node-a.internal"}).node_id == "node-a.internal:443"
    named = read_env({"ENGRAM_NODE_URL": "http://10.0.0.5:8080", "ENGRAM_NODE_ID": "rack1-a"})
    assert named.node_id == "rack1-a"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"ENGRAM_NODE_URL": "10.0.0.5:8080"}, "ENGRAM_NODE_URL"),
        ({"ENGRAM_HEARTBEAT_MS": "10"}, "ENGRAM_HEARTBEAT_MS"),
        ({"ENGRAM_HEARTBEAT_MS": "2000", "ENGRAM_LEASE_TIMEOUT_MS": "3000"}, "ENGRAM_LEASE_TIMEOUT_MS"),
    ],
)
def test_bad_cluster_settings_name_the_variable(env, named):
    with pytest.raises(ConfigError, match=named):
        read_env(env)


def test_a_cluster_node_serves_with_one_process_and_refuses_more():
    node = {"ENGRAM_DATABASE_URL": PG, "ENGRAM_NODE_URL": "http://10.0.0.5:8080"}
    assert read_env(node).processes == 1  # not the core count: one node is one lease holder
    assert read_env({**node, "ENGRAM_PROCESSES": "1"}).processes == 1
    with pytest.raises(ConfigError, match="ENGRAM_PROCESSES=2 is not supported on a cluster node"):
        read_env({**node, "ENGRAM_PROCESSES": "2"})
    assert read_env({"ENGRAM_DATABASE_URL": PG, "ENGRAM_PROCESSES": "2"}).processes == 2  # not a cluster
