-- 0015: the files ingested into a space (docs/documents.md#citations): one row per document, whose chunks
-- are memories carrying attrs.documentId. The row is replaced, with the chunks, in one transaction.
-- Portable SQL; a PostgreSQL twin mirrors it.
CREATE TABLE documents (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    document_id TEXT NOT NULL,
    name TEXT NOT NULL,
    source_url TEXT,
    kind TEXT NOT NULL,                  -- the detected type: pdf, docx, pptx, xlsx, html, markdown, csv, text, image
    bytes INTEGER NOT NULL,
    sha256 TEXT NOT NULL,                -- of the file as received
    pages INTEGER,                       -- PDF pages or PPTX slides
    chunks INTEGER NOT NULL,
    ocr_pages INTEGER NOT NULL DEFAULT 0,
    ocr_skipped INTEGER NOT NULL DEFAULT 0,
    ingested_at TEXT NOT NULL,
    PRIMARY KEY (space_id, document_id)
);
