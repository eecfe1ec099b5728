-- 0003: members of hosted spaces (engram as their space host, docs/space-host.md).
-- A row is a grant; revoking deletes it, and the credential exchange reads this table on every call, so a
-- revocation takes effect at the member's next exchange. `can_write` is recorded for the protocol's
-- write policy; reads need `can_read`.
CREATE TABLE space_members (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    did TEXT NOT NULL,
    can_read INTEGER NOT NULL CHECK (can_read IN (0, 1)),
    can_write INTEGER NOT NULL CHECK (can_write IN (0, 1)),
    granted_at TEXT NOT NULL,
    PRIMARY KEY (space_id, did)
) WITHOUT ROWID;
