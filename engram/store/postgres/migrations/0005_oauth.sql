-- 0005: the OAuth2 server's clients, codes and tokens (twin of the SQLite migration).
CREATE TABLE oauth_clients (
    client_id text COLLATE "C" PRIMARY KEY,
    name text COLLATE "C" NOT NULL,
    redirect_uris text COLLATE "C" NOT NULL,
    secret_hash text COLLATE "C",
    created_at text COLLATE "C" NOT NULL
);
CREATE TABLE oauth_codes (
    code_hash text COLLATE "C" PRIMARY KEY,
    client_id text COLLATE "C" NOT NULL,
    key_id bigint NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    scopes text COLLATE "C" NOT NULL,
    redirect_uri text COLLATE "C" NOT NULL,
    code_challenge text COLLATE "C",
    family text COLLATE "C" NOT NULL,
    expires_at bigint NOT NULL,
    used_at bigint
);
CREATE TABLE oauth_tokens (
    token_hash text COLLATE "C" PRIMARY KEY,
    kind text COLLATE "C" NOT NULL CHECK (kind IN ('access', 'refresh')),
    client_id text COLLATE "C" NOT NULL,
    key_id bigint NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    scopes text COLLATE "C" NOT NULL,
    family text COLLATE "C" NOT NULL,
    expires_at bigint NOT NULL,
    revoked_at bigint
);
CREATE INDEX oauth_tokens_by_family ON oauth_tokens (family);
