-- 0009: MCP streamable-HTTP sessions (docs/mcp.md#sessions), shared by every serving process and cluster
-- node like the console sessions: a client's next request may reach any of them.
-- Portable SQL only (plain CREATE TABLE, BIGINT times in milliseconds): a PostgreSQL twin mirrors it.
CREATE TABLE mcp_sessions (
    digest TEXT PRIMARY KEY,        -- sha256 hex of the Mcp-Session-Id (the id itself is not stored)
    principal TEXT NOT NULL,        -- who opened it ('key:<id>'); another credential gets 404
    created_ms BIGINT NOT NULL,
    used_ms BIGINT NOT NULL         -- last request, kept to within a minute; idle past the expiry: gone
);
CREATE INDEX mcp_sessions_used ON mcp_sessions (used_ms);
CREATE INDEX mcp_sessions_principal ON mcp_sessions (principal, created_ms);
