-- 0009: SQLite drops its FTS5 keyword table here (engram/store/migrations/0009_drop_keyword_fts.sql).
-- PostgreSQL never had one (docs/scale-out.md#keyword-search); this twin keeps the numbered sets equal.
SELECT 1;
