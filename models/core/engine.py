"""Connection set-up per dialect and the write unit of work, on a plain SQLAlchemy engine.

SQLite is the single-box default. Its connections run in WAL mode with a busy timeout
and foreign keys on, and the driver's own transaction handling is turned off so that
Tickwork issues ``BEGIN`` itself: read transactions begin deferred, write transactions
begin ``IMMEDIATE``. Two deferred transactions that read and then write fail at once
with SQLITE_BUSY_SNAPSHOT whatever the busy timeout; taking the write lock up front
makes the second writer wait its turn instead.

Nothing here needs Flask: the app's handle (:mod:`models.core.database`) builds on it, and
the command line's database-only commands use it directly, without building the app.
"""

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

SQLITE_BUSY_TIMEOUT_MS = 10_000
WRITE_OPTION = "tickwork_write"
_configured: "weakref.WeakSet[Engine]" = weakref.WeakSet()
_writer_locks: "weakref.WeakKeyDictionary[Engine, threading.RLock]" = weakref.WeakKeyDictionary()
_writer_locks_guard = threading.Lock()


def configure_engine(engine: Engine) -> None:
    """Install the per-dialect connection hooks on ``engine`` (idempotent)."""
    if engine.dialect.name != "sqlite" or engine in _configured:
        return
    _configured.add(engine)

    @event.listens_for(engine, "connect")
    def _sqlite_connect(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn):
        if conn.get_execution_options().get(WRITE_OPTION):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")


def _writers_of(engine: Engine):
    """On SQLite, the lock this process's writers queue on; elsewhere nothing to wait for.

    SQLite admits one writer at a time, and a writer that finds the database locked sleeps
    in its busy handler (1, 2, 5, 10 ... 100 ms) before it looks again, so threads of one
    process taking turns through it leave the database idle between them. Queued on a lock
    here, the next writer starts the moment the last one commits. Other processes still meet
    the busy timeout. Re-entrant, so a nested writer fails as it would without it.
    """
    if engine.dialect.name != "sqlite":
        return nullcontext()
    with _writer_locks_guard:
        lock = _writer_locks.get(engine)
        if lock is None:
            lock = _writer_locks[engine] = threading.RLock()
    return lock


def begin_write(session: Session) -> None:
    """Start ``session``'s transaction as a writer (``BEGIN IMMEDIATE`` on SQLite)."""
    session.connection(execution_options={WRITE_OPTION: True})


@contextmanager
def engine_write_session(engine: Engine) -> Iterator[Session]:
    """One short write transaction on ``engine`` in a session of its own; commits, or rolls back on error."""
    with _writers_of(engine), Session(engine, expire_on_commit=False) as session:
        begin_write(session)
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise


@contextmanager
def engine_read_session(engine: Engine) -> Iterator[Session]:
    """A session for reads on ``engine`` outside a request."""
    with Session(engine, expire_on_commit=False) as session:
        yield session
