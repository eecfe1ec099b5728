-- 0006: synced spaces' access method and per-repo sync health (twin of the SQLite migration).
CREATE TABLE synced_spaces (
    space_id bigint PRIMARY KEY REFERENCES spaces(id) ON DELETE CASCADE,
    access_kind text COLLATE "C" NOT NULL,
    access_json text COLLATE "C" NOT NULL,
    last_space_rev text COLLATE "C",
    last_full_sync text COLLATE "C",
    last_error text COLLATE "C",
    created_at text COLLATE "C" NOT NULL
);

ALTER TABLE sync_state ADD COLUMN set_state bytea;
ALTER TABLE sync_state ADD COLUMN last_success text COLLATE "C";
ALTER TABLE sync_state ADD COLUMN last_error text COLLATE "C";
ALTER TABLE sync_state ADD COLUMN failures bigint NOT NULL DEFAULT 0;
ALTER TABLE sync_state ADD COLUMN retry_after double precision;
