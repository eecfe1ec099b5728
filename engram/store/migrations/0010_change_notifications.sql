-- 0010: nothing on SQLite. The PostgreSQL twin makes changes to spaces and API keys send a notification
-- that drops each process's cached point reads (docs/scale-out.md#point-reads); on SQLite every process
-- bumps the shared change counter after each commit instead (engram/store/change_counter.py). The file
-- keeps both numbered sets equal.
SELECT 1;
