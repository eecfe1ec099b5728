-- 0004: API keys bound to several hosted spaces; shim document and conversation lookups (twin of the
-- SQLite migration). The expression indexes index exactly what engram/store/dialect.py's PostgreSQL
-- fragments compare, so the planner can use them.
CREATE TABLE api_key_spaces (
    key_id bigint NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    space_id bigint NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    PRIMARY KEY (key_id, space_id)
);
CREATE INDEX api_key_spaces_by_space ON api_key_spaces (space_id);
INSERT INTO api_key_spaces (key_id, space_id) SELECT id, space_id FROM api_keys;

CREATE INDEX memories_by_document ON memories (space_id, ((attrs)::jsonb ->> 'documentId'));
CREATE INDEX memories_by_conversation ON memories (
    space_id, ((attrs)::jsonb ->> 'workflowId'), ((attrs)::jsonb ->> 'conversationKey')
);
