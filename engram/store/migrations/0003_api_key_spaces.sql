-- 0003: an API key may be bound to several hosted spaces (the REST shims' knowledge bases / tenants).
-- api_keys.space_id stays the key's primary space (where shim writes go); every space the key may use,
-- the primary included, has a row here. A space's short id (what a GPTBots group_id names) is its row id
-- in `spaces`, which is never reused, so it is stable for the life of the database.
CREATE TABLE api_key_spaces (
    key_id INTEGER NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    PRIMARY KEY (key_id, space_id)
) WITHOUT ROWID;
CREATE INDEX api_key_spaces_by_space ON api_key_spaces (space_id);
INSERT INTO api_key_spaces (key_id, space_id) SELECT id, space_id FROM api_keys;

-- Shim documents: a memory's document id (attrs.documentId, e.g. a GPTBots data_id or a retrieval-plugin
-- document_id) is looked up without scanning the space.
CREATE INDEX memories_by_document ON memories (space_id, json_extract(attrs, '$.documentId'));

-- Sim memory-block conversations: the messages of one (workflowId, key), in order, without a scan.
CREATE INDEX memories_by_conversation ON memories (
    space_id, json_extract(attrs, '$.workflowId'), json_extract(attrs, '$.conversationKey')
);
