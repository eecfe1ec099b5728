-- 0002: how far each space's tombstones have been pruned (twin of the SQLite migration).
ALTER TABLE spaces ADD COLUMN tombstones_pruned_through bigint NOT NULL DEFAULT 0;
