-- 0006: synced spaces' access method and per-repo sync health (twin of the SQLite migration).
CREATE TABLE synced_spaces (
    space_id bigint PRIMARY KEY REFERENCES spaces(id) ON DELETE CASCADE,
    access_kind text NOT NULL,
    access_json text NOT NULL,
    last_space_rev text,
    last_full_sync text,
    last_error text,
    created_at text NOT NULL
);

ALTER TABLE sync_state ADD COLUMN set_state bytea;
ALTER TABLE sync_state ADD COLUMN last_success text;
ALTER TABLE sync_state ADD COLUMN last_error text;
ALTER TABLE sync_state ADD COLUMN failures bigint NOT NULL DEFAULT 0;
ALTER TABLE sync_state ADD COLUMN retry_after double precision;
