-- 0009: drop the FTS5 keyword table and its two triggers (docs/scale-out.md#keyword-search).
-- Nothing has read `memories_fts` since keyword and hybrid ranking moved to the in-memory BM25 index
-- (engram/search/keyword_index.py), but every memory insert and delete still paid to index its words
-- there: the triggers were the largest part of a small write's time in the store. Dropping the table
-- frees its pages on the next VACUUM; the memories themselves are untouched.
DROP TRIGGER IF EXISTS memories_fts_insert;
DROP TRIGGER IF EXISTS memories_fts_delete;
DROP TABLE IF EXISTS memories_fts;
