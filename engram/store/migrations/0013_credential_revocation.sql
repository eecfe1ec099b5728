-- 0011: revoking space credentials (docs/space-host.md#revoking-credentials). Portable SQL; a PostgreSQL
-- twin mirrors it.

-- The credentials engram minted for members of its hosted spaces, until they expire: when a member is
-- revoked, these name the credentials to revoke (notifyCredentialRevoked carries their jti).
CREATE TABLE issued_credentials (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    jti TEXT NOT NULL,
    member TEXT NOT NULL,
    expires_ms BIGINT NOT NULL,
    PRIMARY KEY (space_id, jti)
);
CREATE INDEX issued_credentials_member ON issued_credentials (space_id, member);
CREATE INDEX issued_credentials_expiry ON issued_credentials (expires_ms);

-- Credentials that must be refused before they expire: those of revoked members of hosted spaces, and
-- those a synced space's authority said it revoked (com.atproto.space.notifyCredentialRevoked).
CREATE TABLE revoked_credentials (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    jti TEXT NOT NULL,
    expires_ms BIGINT NOT NULL,
    PRIMARY KEY (space_id, jti)
);
CREATE INDEX revoked_credentials_expiry ON revoked_credentials (expires_ms);
