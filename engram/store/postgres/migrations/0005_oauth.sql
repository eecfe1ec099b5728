-- 0005: the OAuth2 server's clients, codes and tokens (twin of the SQLite migration).
CREATE TABLE oauth_clients (
    client_id text PRIMARY KEY,
    name text NOT NULL,
    redirect_uris text NOT NULL,
    secret_hash text,
    created_at text NOT NULL
);
CREATE TABLE oauth_codes (
    code_hash text PRIMARY KEY,
    client_id text NOT NULL,
    key_id bigint NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    scopes text NOT NULL,
    redirect_uri text NOT NULL,
    code_challenge text,
    family text NOT NULL,
    expires_at bigint NOT NULL,
    used_at bigint
);
CREATE TABLE oauth_tokens (
    token_hash text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('access', 'refresh')),
    client_id text NOT NULL,
    key_id bigint NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    scopes text NOT NULL,
    family text NOT NULL,
    expires_at bigint NOT NULL,
    revoked_at bigint
);
CREATE INDEX oauth_tokens_by_family ON oauth_tokens (family);
