-- 0010: tell every process when the rows per-request point reads come from change
-- (docs/scale-out.md#point-reads). Each statement that inserts, updates or deletes rows of `spaces`,
-- `api_keys` or `api_key_spaces` sends NOTIFY engram_changes from inside its transaction; PostgreSQL
-- delivers it when the transaction commits (one per transaction: identical notifications are folded) and
-- never for one rolled back. Each engram process LISTENs (engram/store/postgres/changes.py) and drops the
-- spaces and API keys it remembered.
CREATE OR REPLACE FUNCTION engram_notify_change() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('engram_changes', '');
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS engram_spaces_changed ON spaces;
CREATE TRIGGER engram_spaces_changed AFTER INSERT OR UPDATE OR DELETE ON spaces
    FOR EACH STATEMENT EXECUTE FUNCTION engram_notify_change();
DROP TRIGGER IF EXISTS engram_api_keys_changed ON api_keys;
CREATE TRIGGER engram_api_keys_changed AFTER INSERT OR UPDATE OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION engram_notify_change();
DROP TRIGGER IF EXISTS engram_api_key_spaces_changed ON api_key_spaces;
CREATE TRIGGER engram_api_key_spaces_changed AFTER INSERT OR UPDATE OR DELETE ON api_key_spaces
    FOR EACH STATEMENT EXECUTE FUNCTION engram_notify_change();
