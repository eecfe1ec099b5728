-- 0008: nothing on SQLite. The PostgreSQL twin of this number creates cluster mode's tables and its write
-- trigger; a cluster needs a PostgreSQL store (docs/scale-out.md#nodes-and-ownership), so a SQLite file
-- never holds them. The file exists so both sets keep the same numbers; the statement below only gives the
-- migration runner something to run.
SELECT 1;
