"""Helpers shared by the retention tests: an archive directory, one day of retention, a pass, what is where."""

import pytest
import sqlite_utils
from sqlalchemy import select

from models.actions import lifecycle
from models.actions.tables import ScheduledAction
from models.core.database import read_session, write_session
from models.core.moves import Actor
from models.core.runtime import runtime
from models.retention.archiving import run_archive
from models.retention.settings import retention_from_config
from models.retention.tables import ArchivedAction

JOB = Actor.job("test")


@pytest.fixture
def archive_dir(tmp_path):
    directory = tmp_path / "archive"
    directory.mkdir()
    return directory


@pytest.fixture
def app_config(app_config, archive_dir):
    app_config.update(TICKWORK_RETENTION_DAYS=1, TICKWORK_ARCHIVE_DIR=str(archive_dir))
    return app_config


def archive(app, **kwargs) -> dict:
    with app.app_context():
        rt = runtime()
        return run_archive(clock=rt.clock, settings=retention_from_config(app.config), **kwargs)


def live_ids(app) -> set[int]:
    with app.app_context(), read_session() as session:
        return set(session.scalars(select(ScheduledAction.id)))


def archived_files(app) -> dict[int, str]:
    with app.app_context(), read_session() as session:
        return dict(session.execute(select(ArchivedAction.action_id, ArchivedAction.file)).all())


def archive_count(archive_dir, table: str, where: str = "1 = 1") -> int:
    total = 0
    for path in archive_dir.glob("tickwork-archive-*.db"):
        total += sqlite_utils.Database(path).execute(f"SELECT count(*) FROM {table} WHERE {where}").fetchone()[0]
    return total


def publish_now(app, action_id):
    with app.app_context(), write_session() as session:
        now = runtime().now()
        claimed = lifecycle.claim(session, action_id, now=now, actor=JOB)
        assert claimed.ok
        assert lifecycle.publish(session, action_id, claim_token=claimed.row.claim_token, provider_id="p",
                                 now=now, actor=JOB).ok
