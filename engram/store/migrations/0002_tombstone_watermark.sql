-- 0002: how far each space's tombstones have been pruned.
-- Tombstones at or below this generation are gone, so an index saved at an older generation can no longer
-- be caught up by a delta and must be rebuilt from the live rows (engram/search/rows.py DeltaUnavailable).
ALTER TABLE spaces ADD COLUMN tombstones_pruned_through INTEGER NOT NULL DEFAULT 0;
