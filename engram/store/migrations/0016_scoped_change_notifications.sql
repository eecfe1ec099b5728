-- 0016: nothing on SQLite. The PostgreSQL twin tells a space-scoped write's change to `spaces` (a
-- generation bump) apart from other changes in its notifications, so remembered API-key lookups survive
-- a memory-write load there as they do here (engram/store/change_counter.py `keys_value`). The file keeps
-- both numbered sets equal.
SELECT 1;
