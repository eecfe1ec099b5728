-- 0003: members of hosted spaces (engram as their space host, docs/space-host.md).
-- A row is a grant; revoking deletes it, and the credential exchange reads this table on every call, so a
-- revocation takes effect at the member's next exchange. `can_write` is recorded for the protocol's
-- write policy; reads need `can_read`.
CREATE TABLE space_members (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    did TEXT NOT NULL,
    can_read INTEGER NOT NULL CHECK (can_read IN (0, 1)),
    can_write INTEGER NOT NULL CHECK (can_write IN (0, 1)),
    granted_at TEXT NOT NULL,
    PRIMARY KEY (space_id, did)
) WITHOUT ROWID;

-- The authority's repo of each hosted space (docs/space-host.md): the records it holds now, the oplog a
-- syncer folds, and the signed head. Written in the same transaction as the memory or config write they
-- record, so nothing acknowledged is missing from the repo.
-- (A rowid table: records carry ~1 KB vectors, and WITHOUT ROWID tables are slow with rows that large.)
CREATE TABLE repo_records (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    collection TEXT NOT NULL,
    rkey TEXT NOT NULL,
    cid TEXT NOT NULL,
    block BLOB NOT NULL,                 -- the record's DAG-CBOR bytes (cid is their CIDv1)
    UNIQUE (space_id, collection, rkey)
);

-- One row per record change. rev is NULL until the transaction's commit step signs a commit covering it
-- (engram/store/repo.py commit_pending), which runs before COMMIT, so NULLs never outlive a transaction.
CREATE TABLE repo_ops (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    rev TEXT,
    collection TEXT NOT NULL,
    rkey TEXT NOT NULL,
    cid TEXT,                            -- NULL: a delete
    prev TEXT                            -- NULL: a create
);
CREATE INDEX repo_ops_by_space ON repo_ops (space_id, seq);
CREATE INDEX repo_ops_unsigned ON repo_ops (space_id) WHERE rev IS NULL;

CREATE TABLE repo_heads (
    space_id INTEGER PRIMARY KEY REFERENCES spaces(id) ON DELETE CASCADE,
    repo TEXT NOT NULL,                  -- the repo owner: the space's authority
    rev TEXT NOT NULL,
    prev_rev TEXT,
    state BLOB NOT NULL,                 -- the LtHash state (2048 bytes) the commit's hash is the sha256 of
    signed_commit BLOB NOT NULL,         -- DAG-CBOR of the signed commit
    updated_at TEXT NOT NULL
);

-- Syncers registered for write notifications of a hosted space (com.atproto.space.registerNotify).
-- Registrations lapse (expires_at) unless renewed; re-registering replaces.
CREATE TABLE notify_registrations (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    service TEXT NOT NULL,               -- the service id as registered: DID#fragment (the JWT audience)
    endpoint TEXT NOT NULL,              -- that service entry's URL when it was registered
    expires_at REAL NOT NULL,            -- unix seconds
    PRIMARY KEY (space_id, service)
) WITHOUT ROWID;
