-- 0017: a registered OAuth client belongs to the mount that registered it (twin of the SQLite migration).
ALTER TABLE oauth_clients ADD COLUMN issuer text COLLATE "C" NOT NULL DEFAULT 'mcp';
