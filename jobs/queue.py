"""The Huey instances, their storage chosen from ``TICKWORK_QUEUE_URL``, built in this one place.

``huey`` carries the clock jobs and the dispatch tasks (sends); ``works_huey`` is a second
queue, ``works``, in the same storage, for work generations, which may run for minutes:
they have consumers of their own (``tickwork consumer --queue works``), so a long
generation never holds up a send.

| ``TICKWORK_QUEUE_URL``        | storage                                              |
|-------------------------------|------------------------------------------------------|
| ``sqlite:///path/queue.db``   | ``SqliteStorage`` (the default: a file beside the app database), synchronous as the app database's |
| ``postgresql://...``          | ``PostgresStorage`` (LISTEN/NOTIFY, ``SKIP LOCKED``), tables ``huey_*``, created under an advisory lock |
| ``redis://...``               | ``RedisStorage``                                     |
| ``immediate``                 | Huey's immediate mode: tasks run inline, ``eta`` tasks never run |

Nothing connects at import time, nor when an app is configured: the storage is built on
first use (an enqueue, or the consumer starting).
"""

import logging
import threading

import huey as huey_package
from flask import Flask, current_app, has_app_context
from huey import Huey
from huey.storage import MemoryStorage, PostgresStorage, RedisStorage, SqliteStorage

from models.core.queue_url import IMMEDIATE, queue_storage

# enqueue_many writes rows straight into Huey's own task tables, whose layout is Huey's
# business: it was written against this release and is used only with it.
BULK_ENQUEUE_WRITTEN_FOR = "3.5.4"

log = logging.getLogger("tickwork.queue")


class QueueSqliteStorage(SqliteStorage):
    """SqliteHuey as durable as the app database: WAL with ``synchronous = NORMAL``, not Huey's FULL.

    FULL syncs the log at every commit, and a consumer commits to its queue at every task
    it takes. The queue needs no more than the app database has: a task lost to a power cut
    leaves its rows queued for the next tick, and one run again meets their claims.
    """

    def _create_connection(self):
        conn = super()._create_connection()
        conn.execute("pragma synchronous = NORMAL")
        return conn


class QueuePostgresStorage(PostgresStorage):
    """PostgresHuey whose tables are created by one process at a time.

    Huey creates its tables with ``CREATE TABLE IF NOT EXISTS`` whenever a storage is built, and
    PostgreSQL does not make that safe between sessions: two consumers starting together on a
    database without the tables both create them, and one fails on ``pg_type``'s unique index
    and exits before taking a task. A transaction-level advisory lock, held until the DDL
    commits, makes the second wait and then find the tables there.
    """

    def initialize_schema(self):
        with self.db(commit=True, close=True) as cursor:
            cursor.execute("select pg_advisory_xact_lock(hashtext(%s))", (f"tickwork:{self.table_task}:schema",))
            for statement in self.ddl:
                cursor.execute(statement)


STORAGES = {None: None, "sqlite": QueueSqliteStorage, "postgresql": QueuePostgresStorage, "redis": RedisStorage}


def storage_for(queue_url: str) -> tuple[type | None, dict]:
    """The storage class and its arguments for a queue URL; (None, {}) means immediate mode."""
    kind, kwargs = queue_storage(queue_url)
    return STORAGES[kind], kwargs


class TickworkHuey(Huey):
    """A Huey whose storage is configured after import and built lazily.

    :meth:`enqueue_many` inserts a tick's tasks into Huey's own ``task`` tables in one
    transaction, which relies on their layout in Huey ``BULK_ENQUEUE_WRITTEN_FOR``. At
    configure time the installed Huey is checked: any other release gets Huey's own
    one-by-one ``enqueue`` instead (slower, always correct) and a warning in the log.
    """

    def __init__(self, name: str = "tickwork"):
        self._storage = None
        self._storage_lock = threading.Lock()
        self.queue_url = IMMEDIATE
        self.bulk_enqueue = False
        # Results are never read: the database is the record of what happened.
        super().__init__(name, results=False, immediate=True, utc=True)

    def configure(self, queue_url: str) -> None:
        """Point this Huey at ``queue_url``; the storage is opened on first use."""
        storage_class, kwargs = storage_for(queue_url)
        if queue_url == self.queue_url and self._storage is not None:
            return
        old, self._storage = self._storage, None
        if old is not None and not isinstance(old, MemoryStorage):
            old.close()
        self.queue_url = queue_url
        self.bulk_enqueue = huey_package.__version__ == BULK_ENQUEUE_WRITTEN_FOR
        if not self.bulk_enqueue:
            log.warning("Huey %s is installed; bulk enqueue was written for %s, so tasks are enqueued one by one",
                        huey_package.__version__, BULK_ENQUEUE_WRITTEN_FOR)
        if storage_class is None:
            self._immediate = True
            self._storage = MemoryStorage(self.name)
        else:
            self._immediate = False
            self.storage_class = storage_class
            self.storage_kwargs = kwargs

    def enqueue_many(self, tasks: list) -> None:
        """Enqueue ``tasks`` in one storage transaction (SQLite, PostgreSQL), else one by one.

        A tick hands over thousands of tasks; one committed transaction each would cost a
        durable commit per row before the first one is even sent.
        """
        storage = self.storage
        if self._immediate or not self.bulk_enqueue or not isinstance(storage, (SqliteStorage, PostgresStorage)):
            for task in tasks:
                self.enqueue(task)
            return
        if not tasks:
            return
        rows = [(storage.name, self.serialize_task(task), task.priority or 0) for task in tasks]
        if isinstance(storage, PostgresStorage):
            with storage.db(commit=True) as cursor:
                cursor.executemany(f"insert into {storage.table_task} (queue, data, priority) values (%s, %s, %s)",
                                   rows)
                cursor.execute("select pg_notify(%s, %s)", (storage.channel, ""))
        else:
            with storage.db(commit=True) as cursor:
                cursor.executemany("insert into task (queue, data, priority) values (?, ?, ?)",
                                   [(name, storage.to_blob(data), priority) for name, data, priority in rows])

    @property
    def storage(self):
        if self._storage is None:
            with self._storage_lock:
                if self._storage is None:
                    self._storage = self.create_storage()
        return self._storage

    @storage.setter
    def storage(self, value):
        self._storage = value


huey = TickworkHuey()
works_huey = TickworkHuey("tickwork-works")
QUEUES = {"default": huey, "works": works_huey}


def configure_queues(queue_url: str) -> None:
    """Point every queue at ``queue_url`` (each keeps its own name inside the storage)."""
    for queue in QUEUES.values():
        queue.configure(queue_url)

_bound = {"app": None}


def bind_app(app: Flask) -> None:
    """Remember the app task bodies run in when no app context is active (the consumer)."""
    _bound["app"] = app


def task_app() -> Flask:
    """The app a task body runs in: the active one (inline runs), else the bound one (the consumer)."""
    if has_app_context():
        return current_app._get_current_object()
    if _bound["app"] is None:
        raise RuntimeError("no Tickwork app is bound to the queue; call jobs.init_app(app) first")
    return _bound["app"]
