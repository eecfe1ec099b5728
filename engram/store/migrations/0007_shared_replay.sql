-- 0007: state that every serving process must share (docs/internals.md#using-every-core).
-- Portable SQL only (plain CREATE TABLE, BIGINT times in milliseconds): a PostgreSQL twin mirrors it.

-- Replay claims: a service-auth JWT id, an admin request nonce or a client attestation id is claimed
-- once, whichever process sees it first. The key is a sha256 digest, so its size is bounded.
CREATE TABLE replay_claims (
    scope TEXT NOT NULL,            -- 'service_jwt', 'admin_nonce', 'client_attestation'
    claim_key TEXT NOT NULL,        -- sha256 hex of (issuer, id)
    expires_ms BIGINT NOT NULL,     -- after this the id can no longer verify, so the row can go
    PRIMARY KEY (scope, claim_key)
);
CREATE INDEX replay_claims_expiry ON replay_claims (expires_ms);

-- Web console sessions, found by the sha256 of the cookie's random value (the cookie itself is not stored).
CREATE TABLE console_sessions (
    digest TEXT PRIMARY KEY,
    role TEXT NOT NULL,             -- 'operator' or 'reader'
    key_id BIGINT,                  -- the API key a reader signed in with
    csrf TEXT NOT NULL,
    created_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_ms);
CREATE INDEX console_sessions_key ON console_sessions (key_id);


-- One-time console sign-in links (`engram console login` writes one, any serving process redeems it),
-- by the sha256 of the token: the token itself exists only in the printed link.
CREATE TABLE console_links (
    digest TEXT PRIMARY KEY,
    expires_ms BIGINT NOT NULL
);
CREATE INDEX console_links_expiry ON console_links (expires_ms);
