-- 0003: synced spaces (engram/sync): how engram reads each one, and per-repo sync health.

-- One row per synced space: the read-access method (kind + its non-secret parameters; secrets live in a
-- 0600 file under <data_dir>/sync/) and the space-level sync position.
CREATE TABLE synced_spaces (
    space_id INTEGER PRIMARY KEY REFERENCES spaces(id) ON DELETE CASCADE,
    access_kind TEXT NOT NULL,           -- 'app_password' today; OAuth grants later
    access_json TEXT NOT NULL,           -- non-secret parameters of the access method (account DID, PDS URL)
    last_space_rev TEXT,                 -- newest spaceRev seen in a notification or listRepos
    last_full_sync TEXT,                 -- when a full pass (listRepos) last completed
    last_error TEXT,
    created_at TEXT NOT NULL
);

-- The LtHash state a repo's position stands at (2048 bytes), so incremental ops can be folded onto it,
-- and each repo's sync health for getSpaceStatus.
ALTER TABLE sync_state ADD COLUMN set_state BLOB;
ALTER TABLE sync_state ADD COLUMN last_success TEXT;
ALTER TABLE sync_state ADD COLUMN last_error TEXT;
ALTER TABLE sync_state ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sync_state ADD COLUMN retry_after REAL;  -- unix time before which a failing repo is not retried
