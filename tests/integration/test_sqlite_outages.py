"""SQLite refusing writes mid-tick: ``database is locked`` past the busy timeout (another process holding
``BEGIN IMMEDIATE``), and a full disk (``PRAGMA max_page_count``). The tick fails loudly (a clock run with
the reason, an error in the log), leaves every row consistent, and the next tick resumes."""

import logging
import sqlite3
import threading
import time
from collections import Counter
from contextlib import contextmanager

import pytest
from sqlalchemy import event, select, text
from sqlalchemy.exc import OperationalError

from models.actions.tables import ScheduledAction
from models.channels.outbox import OutboxEntry
from models.clock.tables import ClockRun
from models.core import engine as connection_setup
from models.core.database import db, read_session
from tests.integration.clock_helpers import add_actions, make_channel, tick
from tests.integration.outage_figures import record
from tests.integration.test_clock_processes import HOOK_SECRET, Hook, statuses

pytestmark = [pytest.mark.slow, pytest.mark.only_backend("sqlite")]

ROWS = 300
BUSY_TIMEOUT_MS = 500


@pytest.fixture
def short_busy_timeout(monkeypatch):
    """The app's connections give up on a locked database after half a second instead of ten."""
    monkeypatch.setattr(connection_setup, "SQLITE_BUSY_TIMEOUT_MS", BUSY_TIMEOUT_MS)


@pytest.fixture
def app_config(app_config, short_busy_timeout):
    # Chunks of 100: a log channel's 300 rows are three outcome transactions, so a lock held after the
    # first leaves some rows published and some still queued.
    app_config["TICKWORK_POLICY"] = {"provider_timeout": 1, "task_timeout": 3, "recovery_timeout": 5,
                                     "dispatch_chunk": 100}
    return app_config


class Outbox:
    """The log channel's deliveries, read back from its outbox table: what reached the provider, per row."""

    def __init__(self, app):
        self.app = app

    @property
    def received(self) -> Counter:
        with self.app.app_context(), read_session() as session:
            return Counter(session.scalars(select(OutboxEntry.action_id)))

    def count(self) -> int:
        return sum(self.received.values())


@contextmanager
def sink(app, kind: str):
    """A webhook channel and its loopback receiver, or a log channel and its outbox; yields (workspace id, sink)."""
    if kind == "log":
        yield make_channel(app, "log"), Outbox(app)
        return
    with Hook() as hook:
        yield make_channel(app, "webhook", {"url": hook.url}, HOOK_SECRET), hook


def tick_runs(app) -> list[ClockRun]:
    with app.app_context(), read_session() as session:
        return list(session.scalars(select(ClockRun).where(ClockRun.kind == "tick").order_by(ClockRun.id)))


def consistent(app, hook: Hook, ids: list[int]) -> dict:
    """Every row queued, published, or (a row whose send went out but whose outcome the database refused)
    submitted, in doubt until recovery; none failed; each received at most once; every published row received."""
    final = statuses(app)
    assert set(final) <= {("queued", None), ("published", None), ("submitted", None)}, final
    assert set(hook.received.values()) <= {1}
    with app.app_context(), read_session() as session:
        by_status = {status: set(session.scalars(select(ScheduledAction.id).where(ScheduledAction.status == status)))
                     for status in ("published", "submitted")}
    assert by_status["published"] | by_status["submitted"] == set(hook.received)
    return {"published": len(by_status["published"]), "in_doubt": len(by_status["submitted"]),
            "queued": final.get(("queued", None), 0)}


def resumed(app, clock, hook: Hook, ids: list[int], in_doubt: int) -> dict:
    """The next tick, once the recovery timeout has passed: every row published or, in doubt, failed as
    worker lost (never sent again)."""
    clock.advance(seconds=6)
    summary = tick(app)
    expected = {("published", None): len(ids) - in_doubt}
    if in_doubt:
        expected[("failed", "worker_lost")] = in_doubt
    assert statuses(app) == expected
    assert sorted(hook.received) == sorted(ids) and set(hook.received.values()) == {1}
    return summary


class LockAfterAnOutcome:
    """Another connection takes SQLite's write lock (``BEGIN IMMEDIATE``) the moment the tick has committed the
    ``after``-th transaction that records outcomes (one per row that calls out, one per chunk of a log channel), and holds it past the tick's busy timeout: the tick's next write, the next row's
    claim, meets ``database is locked``. It lets go before the busy timeout of the write after that."""

    def __init__(self, path: str, after: int):
        self.path, self.after, self.outcomes = path, after, 0
        self.outcome_written = threading.local()
        self.released = threading.Event()
        self.taken_at: float | None = None

    def statement(self, _conn, _cursor, statement, *_args):
        if statement.lstrip().upper().startswith("UPDATE SCHEDULED_ACTIONS") and "provider_id" in statement:
            self.outcome_written.value = True

    def committed(self, session):
        if session.in_nested_transaction() or not getattr(self.outcome_written, "value", False):
            return  # a savepoint released inside the transaction is not its commit
        self.outcome_written.value = False
        self.outcomes += 1
        if self.taken_at is not None or self.outcomes < self.after:
            return
        other = sqlite3.connect(self.path, timeout=10, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")
        self.taken_at = time.monotonic()

        def release():
            time.sleep(BUSY_TIMEOUT_MS / 1000 * 1.6)
            other.execute("ROLLBACK")
            other.close()
            self.released.set()

        threading.Thread(target=release).start()


@pytest.mark.parametrize("kind", ["webhook", "log"])
def test_a_lock_held_past_the_busy_timeout_fails_the_tick_loudly_and_the_next_tick_resumes(app, database_url,
                                                                                          backend, caplog, clock,
                                                                                          kind):
    from sqlalchemy.orm import Session

    with sink(app, kind) as (workspace_id, hook):
        ids = add_actions(app, workspace_id, ROWS)
        lock = LockAfterAnOutcome(database_url.removeprefix("sqlite:///"), after=20 if kind == "webhook" else 1)
        with app.app_context():
            engine = db.engine
        event.listen(engine, "after_cursor_execute", lock.statement)
        event.listen(Session, "after_commit", lock.committed)
        try:
            with caplog.at_level(logging.ERROR, logger="tickwork.clock"), pytest.raises(OperationalError,
                                                                                       match="database is locked"):
                tick(app)
        finally:
            event.remove(engine, "after_cursor_execute", lock.statement)
            event.remove(Session, "after_commit", lock.committed)
        assert lock.released.wait(5)
        (failed,) = tick_runs(app)
        assert failed.error and "database is locked" in failed.error, failed.error
        assert any("clock job tick" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
        during = consistent(app, hook, ids)
        assert during["published"] > 0 and during["queued"] > 0 and during["in_doubt"] == 0, during
        resumed(app, clock, hook, ids, during["in_doubt"])
        assert tick_runs(app)[-1].error is None
    record(f"sqlite_locked_{kind}", backend, rows=ROWS, published_before_failure=during["published"],
           sent_twice=sum(1 for n in hook.received.values() if n > 1), lost=ROWS - len(hook.received), in_doubt=0)


@pytest.mark.parametrize("kind", ["webhook", "log"])
def test_a_full_disk_fails_the_tick_loudly_leaves_every_row_consistent_and_the_next_tick_resumes(app, database_url,
                                                                                                backend, caplog,
                                                                                                clock, kind):
    with sink(app, kind) as (workspace_id, hook):
        ids = add_actions(app, workspace_id, ROWS)
        with app.app_context():
            with db.engine.connect() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                pages = conn.execute(text("PRAGMA page_count")).scalar_one()
                free = conn.execute(text("PRAGMA freelist_count")).scalar_one()
            engine = db.engine

        def no_room_to_grow(dbapi_connection, _record):
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages + 1}")

        with app.app_context():
            engine.dispose()
            event.listen(engine, "connect", no_room_to_grow)
        try:
            with caplog.at_level(logging.ERROR, logger="tickwork.clock"), pytest.raises(OperationalError,
                                                                                       match="full"):
                tick(app)
        finally:
            with app.app_context():
                event.remove(engine, "connect", no_room_to_grow)
                engine.dispose()
        (failed,) = tick_runs(app)
        assert failed.error and "full" in failed.error, failed.error
        assert any("clock job tick" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)
        during = consistent(app, hook, ids)
        assert during["queued"] > 0, "the tick sent everything before the disk filled: nothing was tested"
        resumed(app, clock, hook, ids, during["in_doubt"])
        assert tick_runs(app)[-1].error is None
    record(f"sqlite_disk_full_{kind}", backend, rows=ROWS, free_pages_at_start=free,
           published_before_failure=during["published"], sent_twice=sum(1 for n in hook.received.values() if n > 1),
           lost=ROWS - len(hook.received), in_doubt=during["in_doubt"])
