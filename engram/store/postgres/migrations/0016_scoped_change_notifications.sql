-- 0016: a change to `spaces` that only a space-scoped write makes (a memory write's generation bump,
-- tombstone pruning's watermark) notifies engram_changes with the payload 'scoped'; every other change
-- to spaces, API keys and revocations still sends '' (0010, 0013). Each process's remembered API-key and
-- revocation lookups, whose answers such a change cannot alter, then survive a memory-write load from
-- any node, as on SQLite (engram/store/postgres/changes.py, docs/scale-out.md#point-reads); the spaces
-- it remembers are dropped on both payloads, since a space's generation is part of it. Row by row, so
-- the comparison sees each row's old and new values; a statement that changes no row notifies nothing.
CREATE OR REPLACE FUNCTION engram_notify_space_change() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'UPDATE'
        AND to_jsonb(OLD) - 'generation' - 'tombstones_pruned_through'
            = to_jsonb(NEW) - 'generation' - 'tombstones_pruned_through' THEN
        PERFORM pg_notify('engram_changes', 'scoped');
    ELSE
        PERFORM pg_notify('engram_changes', '');
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS engram_spaces_changed ON spaces;
CREATE TRIGGER engram_spaces_changed AFTER INSERT OR UPDATE OR DELETE ON spaces
    FOR EACH ROW EXECUTE FUNCTION engram_notify_space_change();
