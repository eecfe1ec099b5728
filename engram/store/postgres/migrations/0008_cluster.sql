-- 0008: cluster mode's tables and the write trigger (docs/scale-out.md#nodes-and-ownership).
-- Nodes created these at start-up with idempotent DDL before they were a migration, so every statement
-- here still tolerates finding them: a database those nodes used upgrades in place.

-- One row per node: its URL and its last heartbeat. Times are the database's clock, so nodes with skewed
-- clocks still agree on who is live.
CREATE TABLE IF NOT EXISTS cluster_nodes (
    node_id    TEXT PRIMARY KEY,
    url        TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
    last_seen  TIMESTAMPTZ NOT NULL
);
-- One row per space ever served: its holder, the fencing epoch (bumped on every change of holder) and
-- when the lease expires. A released or expired lease keeps its row, so epochs only grow.
CREATE TABLE IF NOT EXISTS space_leases (
    space       TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    epoch       BIGINT NOT NULL,
    acquired_at TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS space_leases_owner ON space_leases (owner);

-- Every committed change of a space's generation (each write batch, delete or config change) sends
-- NOTIFY engram_space_write, '<space uri>' from inside the writing transaction: PostgreSQL delivers it
-- exactly when the write commits and never for one rolled back. Cluster nodes LISTEN for it
-- (engram/cluster/listener.py); without listeners PostgreSQL discards it.
CREATE OR REPLACE FUNCTION engram_notify_space_write() RETURNS trigger AS $$
BEGIN
    IF NEW.generation IS DISTINCT FROM OLD.generation THEN
        PERFORM pg_notify('engram_space_write', NEW.uri);
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS engram_space_write ON spaces;
CREATE TRIGGER engram_space_write AFTER UPDATE OF generation ON spaces
    FOR EACH ROW EXECUTE FUNCTION engram_notify_space_write();
