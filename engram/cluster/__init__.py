"""Several engram nodes over one PostgreSQL store (docs/scale-out.md#nodes-and-ownership).

Each node registers itself with a heartbeat; each space is served by one node, chosen by rendezvous hashing
over the live nodes and held by a lease row; any node forwards a space's reads to the lease holder. Cluster
mode is on only with a PostgreSQL store (`ENGRAM_DATABASE_URL`) and a node URL (`ENGRAM_NODE_URL`); without
them none of this package runs and a single node behaves exactly as before.
"""
