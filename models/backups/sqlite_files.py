"""SQLite files as a backup sees them: copied online, checked, and written back in place.

Every copy goes through SQLite's online backup API, never a file copy: the source is read in
one read transaction, so the copy is the database as it stood at one instant however busy
its writers are (WAL lets them carry on), and writing into a live database takes SQLite's
own write lock, so its other connections see the old content or the new, never a mixture.
"""

import hashlib
import sqlite3
from pathlib import Path

from models.core.errors import InvalidInput
from models.core.files import keep_private

BUSY_TIMEOUT_SECONDS = 30
# Tables every Tickwork app database has, whatever wings it carries.
TICKWORK_TABLES = {"alembic_version", "scheduled_actions", "action_events", "clock_runs", "workspaces"}


def online_copy(source: Path, target: Path, *, single_file: bool = True) -> None:
    """Copy the SQLite database ``source`` into ``target`` (created or overwritten) as of one instant.

    With ``single_file`` the copy is left in rollback-journal mode, one self-contained file;
    otherwise ``target`` keeps its own journal mode (a live WAL database stays WAL).
    """
    with _connect(source) as src, _connect(target) as dst:
        keep_private(target)  # before the copy is written: whatever SQLite adds beside it follows its mode
        src.backup(dst)
        if single_file:
            dst.execute("PRAGMA journal_mode = DELETE")
    src.close()
    dst.close()


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_database(path: Path, *, what: str, tables: set[str] = frozenset()) -> list[str]:
    """Refuse ``path`` unless it is an intact SQLite database holding ``tables``; returns its table names."""
    try:
        with _connect(path, read_only=True) as conn:
            verdict = conn.execute("PRAGMA quick_check").fetchone()[0]
            names = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        conn.close()
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"{what} is not a SQLite database ({exc})", field="path") from None
    if verdict != "ok":
        raise InvalidInput(f"{what} is damaged: SQLite's check says {verdict}", field="path")
    missing = tables - set(names)
    if missing:
        raise InvalidInput(f"{what} is not a Tickwork database (no {', '.join(sorted(missing))} table)", field="path")
    return names


def schema_revision(path: Path) -> str | None:
    """The Alembic revision a Tickwork database file is at."""
    with _connect(path, read_only=True) as conn:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    conn.close()
    return row[0] if row else None


def _connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS)
    return sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS)
