-- 0004: the OAuth2 server (engram/oauth): authorization codes and tokens, each granting some scopes of one
-- API key. Only sha256 hashes of codes and tokens are stored. A code is single-use (used_at); the tokens
-- issued from one code (and refreshed from them) share a `family`, so a replayed code or a reused refresh
-- token revokes the whole family. Deleting or revoking the key ends its grants (the lookup joins api_keys).
-- Registered clients (key-backed clients, whose id is an API key id, need no row).
CREATE TABLE oauth_clients (
    client_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    redirect_uris TEXT NOT NULL,         -- JSON array of exact redirect URIs
    secret_hash TEXT,                    -- sha256 hex of the secret; NULL for a public (PKCE-only) client
    created_at TEXT NOT NULL
);
CREATE TABLE oauth_codes (
    code_hash TEXT PRIMARY KEY,
    client_id TEXT NOT NULL,
    key_id INTEGER NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    scopes TEXT NOT NULL,                -- space-separated OAuth scope names
    redirect_uri TEXT NOT NULL,
    code_challenge TEXT,                 -- PKCE S256 challenge, NULL when the client sent none
    family TEXT NOT NULL,
    expires_at INTEGER NOT NULL,         -- unix seconds
    used_at INTEGER
);
CREATE TABLE oauth_tokens (
    token_hash TEXT PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    client_id TEXT NOT NULL,
    key_id INTEGER NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    scopes TEXT NOT NULL,
    family TEXT NOT NULL,
    expires_at INTEGER NOT NULL,
    revoked_at INTEGER
);
CREATE INDEX oauth_tokens_by_family ON oauth_tokens (family);
