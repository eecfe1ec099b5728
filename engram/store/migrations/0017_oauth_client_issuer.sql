-- 0017: a registered OAuth client belongs to the authorization server (mount) that registered it: each
-- mount is its own authorization server (docs/oauth.md), and a client registered anonymously at /mcp must
-- not be usable at /memorybank. Rows from before are the MCP mount's: only it registers over HTTP.
ALTER TABLE oauth_clients ADD COLUMN issuer TEXT NOT NULL DEFAULT 'mcp';
