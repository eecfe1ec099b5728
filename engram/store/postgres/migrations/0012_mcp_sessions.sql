-- 0009: MCP streamable-HTTP sessions shared by every serving process and node (twin of the SQLite
-- migration; docs/mcp.md#sessions).
CREATE TABLE mcp_sessions (
    digest text COLLATE "C" PRIMARY KEY,
    principal text COLLATE "C" NOT NULL,
    created_ms bigint NOT NULL,
    used_ms bigint NOT NULL
);
CREATE INDEX mcp_sessions_used ON mcp_sessions (used_ms);
CREATE INDEX mcp_sessions_principal ON mcp_sessions (principal, created_ms);
