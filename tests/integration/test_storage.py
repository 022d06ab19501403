"""Storage rules: UTC only, SQLite connection settings, writers that wait, history no delete can erase."""

import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError, StatementError

from models.accounts.tables import ApiToken, Workspace
from models.actions.tables import ScheduledAction
from models.channels.tables import Channel
from models.core.database import read_session, write_session
from models.core.types import NaiveDatetimeError
from tests.factories import add_action


def test_a_naive_datetime_is_refused_before_it_reaches_the_database(app, world):
    with app.app_context():
        with pytest.raises(StatementError) as caught:
            with write_session() as session:
                session.execute(text("SELECT 1"))
                session.scalar(select(ScheduledAction).where(ScheduledAction.publish_at < datetime(2026, 1, 1)))
        assert isinstance(caught.value.orig, NaiveDatetimeError)


def test_instants_come_back_as_aware_utc_whatever_offset_went_in(app, world):
    paris = timezone(timedelta(hours=2))
    action_id = add_action(app, world, publish_at=datetime(2026, 6, 1, 16, 0, tzinfo=paris))
    with app.app_context(), read_session() as session:
        row = session.get(ScheduledAction, action_id)
        assert row.publish_at == datetime(2026, 6, 1, 14, 0, tzinfo=timezone.utc)
        assert row.publish_at.utcoffset() == timedelta(0)


def test_sqlite_connections_use_wal_a_busy_timeout_and_foreign_keys(tmp_path):
    from sqlalchemy import create_engine

    from models.core.database import configure_engine

    engine = create_engine(f"sqlite:///{tmp_path / 'settings.db'}")
    configure_engine(engine)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    engine.dispose()


def test_two_writers_that_read_then_write_both_succeed(app, world, clock):
    """With deferred transactions the second writer fails at once with SQLITE_BUSY_SNAPSHOT;
    with BEGIN IMMEDIATE it waits its turn. On PostgreSQL both simply commit."""
    action_id = add_action(app, world)
    barrier = threading.Barrier(2, timeout=10)
    errors = []

    def writer(label):
        try:
            with app.app_context(), write_session() as session:
                session.get(ScheduledAction, action_id)  # read ...
                try:
                    barrier.wait(timeout=1)  # an IMMEDIATE writer holds the lock; the other waits in BEGIN
                except threading.BrokenBarrierError:
                    pass
                session.execute(text("UPDATE scheduled_actions SET last_error = :label WHERE id = :id"),
                                {"label": label, "id": action_id})  # ... then write
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_deleting_a_workspace_with_history_is_refused(app, world, clock):
    add_action(app, world)
    with app.app_context():
        with pytest.raises(IntegrityError):
            with write_session() as session:
                session.execute(text("DELETE FROM workspaces WHERE id = :id"), {"id": world.workspace_id})
        with read_session() as session:
            assert session.get(Workspace, world.workspace_id) is not None


def test_deleting_a_channel_or_a_row_with_events_is_refused(app, world):
    action_id = add_action(app, world)
    with app.app_context():
        for statement in ("DELETE FROM channels", "DELETE FROM scheduled_actions WHERE id = :id"):
            with pytest.raises(IntegrityError):
                with write_session() as session:
                    session.execute(text(statement), {"id": action_id})


def test_channel_secrets_are_encrypted_at_rest_and_tokens_stored_hashed(app, world):
    from tests.conftest import make_world

    other = make_world(app, name="Initech", channel_kind="webhook",
                       channel_config={"url": "http://127.0.0.1:9/hook"}, secret="s3cret-value")
    with app.app_context(), read_session() as session:
        raw_secret = session.execute(text("SELECT secret_sealed FROM channels WHERE workspace_id = :w"),
                                     {"w": other.workspace_id}).scalar()
        assert raw_secret and "s3cret-value" not in raw_secret
        channel = session.scalar(select(Channel).where(Channel.workspace_id == other.workspace_id))
        assert channel.secret(app.extensions["tickwork"].secret_box) == "s3cret-value"
        hashes = session.scalars(select(ApiToken.token_hash)).all()
        assert hashes and not any(token in hashes for token in other.tokens.values())
