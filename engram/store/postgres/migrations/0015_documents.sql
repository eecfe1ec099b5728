-- 0015: the files ingested into a space (twin of the SQLite migration; docs/documents.md#citations).
CREATE TABLE documents (
    space_id bigint NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    document_id text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    source_url text COLLATE "C",
    kind text COLLATE "C" NOT NULL,
    bytes bigint NOT NULL,
    sha256 text COLLATE "C" NOT NULL,
    pages integer,
    chunks integer NOT NULL,
    ocr_pages integer NOT NULL DEFAULT 0,
    ocr_skipped integer NOT NULL DEFAULT 0,
    ingested_at text COLLATE "C" NOT NULL,
    PRIMARY KEY (space_id, document_id)
);
