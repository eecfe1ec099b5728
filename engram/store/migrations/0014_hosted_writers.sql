-- 0012: the members' repos of a hosted space as its space host knows them (docs/space-host.md#members-repos):
-- each member with write access whose repo host sent notifyWrite, at its latest rev, with the space rev this
-- host gave that write. Portable SQL; a PostgreSQL twin mirrors it.
CREATE TABLE hosted_writers (
    space_id INTEGER NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    repo TEXT NOT NULL,
    repo_rev TEXT NOT NULL,
    hash TEXT,                      -- base64 of the repo's state hash, when the repo host sent one
    space_rev TEXT NOT NULL,
    PRIMARY KEY (space_id, repo)
);
CREATE INDEX hosted_writers_space_rev ON hosted_writers (space_id, space_rev);
