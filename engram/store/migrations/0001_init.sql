-- 0001: the initial schema.
-- Rules for migration files: one statement per line-end (the runner splits on complete statements),
-- no BEGIN/COMMIT (the runner wraps each file in one IMMEDIATE transaction together with its
-- PRAGMA user_version bump, so a file is applied entirely or not at all).

-- One row per space ever seen. A deleted space keeps its row (deleted_at set) so its id and generation
-- never restart: an index file cached under (space, model key, generation) can then never be mistaken for
-- a re-created space's index.
CREATE TABLE spaces (
    id INTEGER PRIMARY KEY,
    uri TEXT NOT NULL UNIQUE,            -- canonical at://{authority}/space/garden.engram.space/{skey}
    authority TEXT NOT NULL,             -- DID that decides who may read
    skey TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('hosted', 'synced')),
    created_at TEXT NOT NULL,
    deleted_at TEXT,
    generation INTEGER NOT NULL DEFAULT 0,   -- bumped by every committed write batch, delete or config change
    -- garden.engram.config as last honoured (NULL model = no config yet -> NoModel)
    model TEXT,
    model_digest TEXT,
    dims INTEGER,
    document_prefix TEXT,
    query_prefix TEXT,
    next_model TEXT,
    next_model_digest TEXT,
    next_dims INTEGER,
    config_json TEXT,                    -- the config record as last seen, for getSpaceStatus.config
    config_updated_at TEXT
);

-- AUTOINCREMENT (not plain rowid) so a row id is never reused, even after the newest row is deleted:
-- the index delta "rows after X + tombstones since generation G" depends on ids only growing.
CREATE TABLE memories (
    row_id INTEGER PRIMARY KEY AUTOINCREMENT,
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    author TEXT NOT NULL,
    rkey TEXT NOT NULL,
    uri TEXT NOT NULL UNIQUE,
    cid TEXT NOT NULL,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',     -- JSON array as written; memory_tags is the filterable copy
    source TEXT,
    attrs TEXT,                          -- JSON object: shim metadata (not part of the record or its CID)
    created_at TEXT NOT NULL,            -- the record's createdAt exactly as given (it is part of the CID)
    created_ms INTEGER NOT NULL,         -- createdAt in ms since the epoch, for sorting and `since`
    indexed_at TEXT NOT NULL,
    vector BLOB,                         -- f16 little-endian, kept even when it does not match the space model
    model_key TEXT,                      -- '{model}@{digest}/{dims}' of vector
    next_vector BLOB,                    -- nextEmbedding during a model change
    next_model_key TEXT,
    UNIQUE (space_id, author, rkey)
);
-- Index loads: entries are ordered by (space_id, rowid), so "rows of a space after row X, ascending" is a
-- range scan with no sort (the load query names it with INDEXED BY so the plan cannot regress to a
-- temp-b-tree sort of every vector blob, which measured 3-4x slower).
CREATE INDEX memories_by_space ON memories (space_id);
-- Newest-first listing (listMemories) and the `since` filter.
CREATE INDEX memories_by_created ON memories (space_id, created_ms DESC, row_id DESC);
CREATE INDEX memories_by_author ON memories (space_id, author, created_ms DESC, row_id DESC);

-- Tags of each memory, one row per tag, for all-of filtering without parsing JSON.
CREATE TABLE memory_tags (
    space_id INTEGER NOT NULL,
    tag TEXT NOT NULL,
    row_id INTEGER NOT NULL REFERENCES memories(row_id) ON DELETE CASCADE,
    PRIMARY KEY (space_id, tag, row_id)
) WITHOUT ROWID;
CREATE INDEX memory_tags_by_row ON memory_tags (row_id);

-- An FTS5 table over text, tags and source, meant for keyword search; nothing ever read it (keyword search
-- is the in-memory BM25 index, docs/architecture.md#data-model) and 0009_drop_keyword_fts.sql drops it.
-- External-content FTS5: the words are indexed, the text itself stays only in `memories`. Rows are never
-- UPDATEd (an update is delete + insert), so an insert and a delete trigger keep it exact. The delete
-- trigger must pass the same values the insert indexed, which is why both read the row's own columns.
CREATE VIRTUAL TABLE memories_fts USING fts5(
    text, tags, source,
    content = 'memories', content_rowid = 'row_id', tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, tags, source) VALUES (new.row_id, new.text, new.tags, new.source);
END;
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags, source)
    VALUES ('delete', old.row_id, old.text, old.tags, old.source);
END;

-- Row ids removed (deleted or replaced by an update) and the generation that removed them: the index
-- applies "deleted since generation G" to catch up without a rebuild.
CREATE TABLE tombstones (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    row_id INTEGER NOT NULL,
    PRIMARY KEY (space_id, generation, row_id)
) WITHOUT ROWID;

-- Memories not indexed under the space's active model, with why (no_model | no_embedding |
-- model_mismatch). Recomputed for the whole space whenever its config changes.
CREATE TABLE skipped (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    author TEXT NOT NULL,
    rkey TEXT NOT NULL,
    reason TEXT NOT NULL,
    PRIMARY KEY (space_id, author, rkey)
) WITHOUT ROWID;

-- Shim API keys: only the sha256 of the token is stored; each key is bound to one hosted space.
CREATE TABLE api_keys (
    id INTEGER PRIMARY KEY,
    key_hash TEXT NOT NULL UNIQUE,       -- sha256 hex of the raw token
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    scopes TEXT NOT NULL,                -- space-separated subset of: read write
    label TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

-- Per-repo sync positions of a synced space (how far each member repository has been pulled).
CREATE TABLE sync_state (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    repo TEXT NOT NULL,                  -- member DID
    rev TEXT,
    set_hash TEXT,
    space_rev TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (space_id, repo)
) WITHOUT ROWID;

-- Import idempotency: an import line's key maps to the memory it created, so re-importing the same file
-- updates those memories instead of adding copies.
CREATE TABLE import_keys (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    author TEXT NOT NULL,
    rkey TEXT NOT NULL,
    PRIMARY KEY (space_id, key)
) WITHOUT ROWID;
