-- 0007: state every serving process shares: replay claims, console sessions and sign-in links (twin of the
-- SQLite migration; docs/internals.md#using-every-core).
CREATE TABLE replay_claims (
    scope text COLLATE "C" NOT NULL,
    claim_key text COLLATE "C" NOT NULL,
    expires_ms bigint NOT NULL,
    PRIMARY KEY (scope, claim_key)
);
CREATE INDEX replay_claims_expiry ON replay_claims (expires_ms);

CREATE TABLE console_sessions (
    digest text COLLATE "C" PRIMARY KEY,
    role text COLLATE "C" NOT NULL,
    key_id bigint,
    csrf text COLLATE "C" NOT NULL,
    created_ms bigint NOT NULL,
    expires_ms bigint NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_ms);
CREATE INDEX console_sessions_key ON console_sessions (key_id);

CREATE TABLE console_links (
    digest text COLLATE "C" PRIMARY KEY,
    expires_ms bigint NOT NULL
);
CREATE INDEX console_links_expiry ON console_links (expires_ms);
