-- 0011: revoking space credentials (twin of the SQLite migration; docs/space-host.md#revoking-credentials).
-- Changes to revoked_credentials notify engram_changes like spaces and API keys (0010), because readers
-- remember the revoked set of a space as a point read (docs/scale-out.md#point-reads).
CREATE TABLE issued_credentials (
    space_id bigint NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    jti text COLLATE "C" NOT NULL,
    member text COLLATE "C" NOT NULL,
    expires_ms bigint NOT NULL,
    PRIMARY KEY (space_id, jti)
);
CREATE INDEX issued_credentials_member ON issued_credentials (space_id, member);
CREATE INDEX issued_credentials_expiry ON issued_credentials (expires_ms);

CREATE TABLE revoked_credentials (
    space_id bigint NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    jti text COLLATE "C" NOT NULL,
    expires_ms bigint NOT NULL,
    PRIMARY KEY (space_id, jti)
);
CREATE INDEX revoked_credentials_expiry ON revoked_credentials (expires_ms);

DROP TRIGGER IF EXISTS engram_revoked_credentials_changed ON revoked_credentials;
CREATE TRIGGER engram_revoked_credentials_changed AFTER INSERT OR UPDATE OR DELETE ON revoked_credentials
    FOR EACH STATEMENT EXECUTE FUNCTION engram_notify_change();
