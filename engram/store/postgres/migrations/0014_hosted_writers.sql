-- 0012: the members' repos of a hosted space (twin of the SQLite migration; docs/space-host.md#members-repos).
CREATE TABLE hosted_writers (
    space_id bigint NOT NULL REFERENCES spaces(id) ON DELETE CASCADE,
    repo text COLLATE "C" NOT NULL,
    repo_rev text COLLATE "C" NOT NULL,
    hash text COLLATE "C",
    space_rev text COLLATE "C" NOT NULL,
    PRIMARY KEY (space_id, repo)
);
CREATE INDEX hosted_writers_space_rev ON hosted_writers (space_id, space_rev);
