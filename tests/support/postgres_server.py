"""A real PostgreSQL server for the tests, started from the binaries on this machine.

`PostgresServer.start()` runs `initdb` into a fresh temp dir (trust auth, loopback only) and `pg_ctl start`s
it on 127.0.0.1 on a free port, with its unix socket in the same temp dir; `create_database()` gives each
test a clean database (`CREATE DATABASE`, a cheap template copy); `stop()` shuts it down. An `atexit` hook
stops it with `-m immediate` too, so a crashed or interrupted session does not leave a server behind.

initdb and postgres refuse to run as root. When the tests run as root (CI containers do), both run as the
unprivileged `nobody` user through `setpriv` (util-linux), with the temp dir chowned to it; /tmp is
world-traversable, so the dir is made there with `tempfile.mkdtemp` rather than under pytest's 0700
basetemp.

Binaries are found on PATH (`initdb`, `pg_ctl`) or in Debian's `/usr/lib/postgresql/<version>/bin`
(newest version first). Without them, `find_binaries()` returns None and the fixtures skip.
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

SKIP_MESSAGE = "PostgreSQL server binaries (initdb, pg_ctl) not found: install postgresql (Debian: apt-get install postgresql)"
SUPERUSER = "engram"
_UNPRIVILEGED = "nobody"


def find_binaries() -> Path | None:
    """The directory holding initdb and pg_ctl, or None."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    for directory in versions:
        if os.access(f"{directory}/initdb", os.X_OK) and os.access(f"{directory}/pg_ctl", os.X_OK):
            return Path(directory)
    return None


def _version_key(directory: str) -> tuple[int, ...]:
    version = Path(directory).parent.name
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PostgresServer:
    def __init__(self, bin_dir: Path, *, options: str = ""):
        self.bin_dir = bin_dir
        self.extra_options = options  # more `-c name=value` for the server (the benches' pg_stat_statements)
        self.root = Path(tempfile.mkdtemp(prefix="engram-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.log = self.root / "server.log"
        self.port = 0
        self._as_other_user: list[str] = []
        self._names = itertools.count(1)
        self._running = False

    @property
    def dsn(self) -> str:
        """The DSN of the maintenance database `postgres`, over TCP on loopback."""
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        """A database's URL over the unix socket: a round trip costs ~40 % less than loopback TCP on the
        busy CI machine, and the store tests make tens of thousands of them."""
        return f"postgresql://{SUPERUSER}@/{database}?host={self.socket_dir}&port={self.port}"

    def start(self) -> PostgresServer:
        self.socket_dir.mkdir()
        if os.geteuid() == 0:
            user = pwd.getpwnam(_UNPRIVILEGED)
            for path in (self.root, self.socket_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
            self._as_other_user = [
                "setpriv",
                f"--reuid={user.pw_uid}",
                f"--regid={user.pw_gid}",
                "--clear-groups",
                "--",
            ]
        # --no-sync: only initdb's own files; the running server keeps fsync on (the durability contract).
        # The default collation is ICU en-US where the server has ICU (PostgreSQL 15+), like a typical
        # production database, so a query that silently relies on byte order (SQLite's) fails here too.
        base = ["initdb", "-D", str(self.data), "-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--no-sync"]
        icu = self._run(*base, "--locale=C.UTF-8", "--locale-provider=icu", "--icu-locale=en-US", check=False)
        if icu.returncode != 0:
            shutil.rmtree(self.data, ignore_errors=True)
            self._run(*base, "--locale=C.UTF-8")
        atexit.register(self._stop_immediately)
        for _attempt in range(5):  # the free port can be taken between probing and binding it
            self.port = _free_port()
            self._options = f"-h 127.0.0.1 -p {self.port} -k {self.socket_dir} -c max_connections=200 {self.extra_options}".rstrip()
            started = self._pg_ctl_start()
            if started.returncode == 0:
                self._running = True
                return self
        raise RuntimeError(f"postgres did not start: {self.log.read_text(errors='replace')[-2000:]}")

    def _pg_ctl_start(self) -> subprocess.CompletedProcess:
        return self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", self._options, "start",
            check=False,
        )  # fmt: skip

    def crash_and_restart(self) -> None:
        """Stop the server the way a power cut would leave it (`-m immediate`: no checkpoint, no clean
        shutdown; the next start runs crash recovery from the WAL) and start it again on the same port."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        started = self._pg_ctl_start()
        if started.returncode != 0:
            raise RuntimeError(f"postgres did not restart: {self.log.read_text(errors='replace')[-2000:]}")

    def create_database(self) -> str:
        """A new empty database (a copy of template1); returns its URL."""
        import psycopg

        name = f"engram_test_{next(self._names)}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def empty_tables(self, url: str) -> None:
        """Delete every row of every engram table and restart the id sequences: a migrated database as
        good as new for the next test, at a fraction of the cost of CREATE + migrate + DROP (~1 s with
        fsync on). The schema version row stays."""
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'engram_schema'"
                )
            ]
            # DELETE, not TRUNCATE: TRUNCATE gives every table and index a new file, each created and
            # fsynced at commit (~0.5 s for engram's schema); deleting a test's few rows is one commit.
            with conn.transaction():
                conn.execute("SET CONSTRAINTS ALL DEFERRED")
                for table in tables:
                    conn.execute(f'DELETE FROM "{table}"')
                for (sequence,) in conn.execute(
                    "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'"
                ).fetchall():
                    conn.execute(f'ALTER SEQUENCE "{sequence}" RESTART')

    def drop_database(self, url: str) -> None:
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._running:
            self._running = False
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)
        shutil.rmtree(self.root, ignore_errors=True)

    def _stop_immediately(self) -> None:
        if self._running:
            self._running = False
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop", check=False)
            shutil.rmtree(self.root, ignore_errors=True)

    def _run(self, program: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [*self._as_other_user, str(self.bin_dir / program), *args]
        done = subprocess.run(
            command, check=False, capture_output=True, text=True, timeout=120, cwd=self.root
        )
        if check and done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done
