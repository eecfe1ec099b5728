"""ChangeCounter (engram/store/change_counter.py): a commit count in shared memory that every process
writing the SQLite file bumps, exact under concurrent bumps from several processes."""

from __future__ import annotations

import multiprocessing

from engram.store.change_counter import ChangeCounter


def _bump(path: str, times: int) -> None:
    counter = ChangeCounter(path)
    for _ in range(times):
        counter.bump()
    counter.close()


def test_every_mapping_of_the_file_sees_every_bump(tmp_path):
    one, two = ChangeCounter(tmp_path / "c"), ChangeCounter(tmp_path / "c")
    assert one.value() == two.value() == 0
    one.bump()
    two.bump()
    assert one.value() == two.value() == 2
    one.close()
    assert one.value() == -1  # closed: callers stop trusting their caches
    assert two.value() == 2
    two.close()


def test_bumps_from_several_processes_all_count(tmp_path):
    path = str(tmp_path / "c")
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_bump, args=(path, 500)) for _ in range(3)]
    for w in workers:
        w.start()
    _bump(path, 500)
    for w in workers:
        w.join(120)
        assert w.exitcode == 0
    counter = ChangeCounter(path)
    assert counter.value() == 2000
    counter.close()


def test_keys_value_leaves_out_only_this_process_s_scoped_commits(tmp_path):
    """`keys_value` (what the API-key and revocation caches check) stays put across this mapping's own
    commits of space-scoped writes and moves for every other commit, including another process's scoped
    ones (it cannot tell what they touched)."""
    mine, other = ChangeCounter(tmp_path / "c"), ChangeCounter(tmp_path / "c")
    start_value, start_keys = mine.value(), mine.keys_value()
    mine.bump(scoped=True)
    assert (mine.value(), mine.keys_value()) == (start_value + 1, start_keys)
    mine.bump()  # an unscoped commit (a key revoked, a space deleted...)
    assert (mine.value(), mine.keys_value()) == (start_value + 2, start_keys + 1)
    other.bump(scoped=True)  # another process's scoped commit
    assert (mine.value(), mine.keys_value()) == (start_value + 3, start_keys + 2)
    assert other.keys_value() == other.value() - 1
    mine.close()
    assert mine.keys_value() == -1
    other.close()
