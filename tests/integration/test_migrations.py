"""The migrations are the schema of record: one head, equal to the models, reversible, guard intact."""

import subprocess
import sys

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from models.core.base import Base
from tests.conftest import ROOT, TEST_SECRET
from webapp import MIGRATIONS_DIR


def _engine(url):
    return create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


def _flask_db(url, *args):
    import os

    env = dict(os.environ, TICKWORK_DATABASE_URL=url, TICKWORK_SECRET_KEY=TEST_SECRET, TICKWORK_QUEUE_URL="immediate")
    result = subprocess.run([sys.executable, "-m", "flask", "--app", "wsgi", "db", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result


def _guard_triggers(engine) -> set[str]:
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            rows = conn.execute(text("SELECT tgname FROM pg_trigger WHERE tgrelid = 'scheduled_actions'::regclass"
                                     " AND NOT tgisinternal"))
        else:
            rows = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"
                                     " AND tbl_name = 'scheduled_actions'"))
        return {row[0] for row in rows}


def test_migrations_have_a_single_head():
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    assert len(ScriptDirectory.from_config(config).get_heads()) == 1


def test_the_migrated_schema_equals_the_models(database_url):
    import models.wings  # noqa: F401  (registers every table)

    engine = _engine(database_url)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={
            "compare_type": True,
            "include_object": lambda obj, name, type_, reflected, other: not (type_ == "table" and name.startswith("huey")),
        })
        diff = compare_metadata(context, Base.metadata)
    engine.dispose()
    assert diff == []


def test_downgrade_to_base_and_upgrade_again_keeps_the_guard(app, database_url, backend):
    from flask_migrate import downgrade, upgrade

    engine = _engine(database_url)
    assert _guard_triggers(engine) == EXPECTED_TRIGGERS[backend]
    with app.app_context():
        downgrade(directory=str(MIGRATIONS_DIR), revision="base")
        assert "scheduled_actions" not in inspect(engine).get_table_names()
        upgrade(directory=str(MIGRATIONS_DIR))
    assert "scheduled_actions" in inspect(engine).get_table_names()
    assert _guard_triggers(engine) == EXPECTED_TRIGGERS[backend] and _guard_refuses(engine)
    engine.dispose()


EXPECTED_TRIGGERS = {
    "postgresql": {"scheduled_actions_publish_guard"},
    "sqlite": {"scheduled_actions_publish_guard_insert", "scheduled_actions_publish_guard_update"},
}


def _guard_refuses(engine) -> bool:
    """Write a published row and try a queued sibling beside it: True when the database refuses it.

    Only columns every revision has are written, and everything is rolled back, so the walk
    up and down is not disturbed.
    """
    now = "2026-06-01 12:00:00"
    with engine.connect() as conn:
        transaction = conn.begin()
        try:
            workspace = conn.execute(text("INSERT INTO workspaces (name, timezone, plan, created_at) "
                                          "VALUES ('Guarded', 'UTC', 'free', :now) RETURNING id"), {"now": now}).scalar()
            channel = conn.execute(text("INSERT INTO channels (workspace_id, name, kind, config, created_at) "
                                        "VALUES (:ws, 'main', 'log', '{}', :now) RETURNING id"),
                                   {"ws": workspace, "now": now}).scalar()
            row = ("INSERT INTO scheduled_actions (workspace_id, action_type, thing_id, target_key, channel_id, payload, "
                   "publish_at, status, attempt_count, origin, created_at, updated_at) VALUES (:ws, 'publish_post', "
                   "'post:1', 'main', :channel, '{}', :now, :status, 0, 'person', :now, :now)")
            values = {"ws": workspace, "channel": channel, "now": now}
            conn.execute(text(row), {**values, "status": "published"})
            nested = conn.begin_nested()
            try:
                conn.execute(text(row), {**values, "status": "queued"})
            except Exception as exc:  # the driver's integrity error, whatever its class
                nested.rollback()
                return "duplicate-publish guard" in str(exc)
            nested.rollback()
            return False
        finally:
            transaction.rollback()


def test_the_exact_guard_triggers_refuse_after_every_migration_step_up_and_down(app, database_url, backend):
    """Walk down to the first revision and up to the head one revision at a time, in this process,
    and back down again: after each step the guard's triggers are exactly the expected ones and
    the database still refuses an active row beside a published sibling."""
    from flask_migrate import downgrade, upgrade

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    revisions = [rev.revision for rev in reversed(list(ScriptDirectory.from_config(config).walk_revisions()))]
    engine = _engine(database_url)
    try:
        with app.app_context():
            downgrade(directory=str(MIGRATIONS_DIR), revision=revisions[0])
            steps = [("up", revision) for revision in revisions[1:]] + [("down", revision)
                                                                      for revision in reversed(revisions[:-1])]
            for direction, revision in steps:
                (upgrade if direction == "up" else downgrade)(directory=str(MIGRATIONS_DIR), revision=revision)
                assert _guard_triggers(engine) == EXPECTED_TRIGGERS[backend], (direction, revision)
                assert _guard_refuses(engine), f"the guard let a sibling through after {direction} to {revision}"
            upgrade(directory=str(MIGRATIONS_DIR))
    finally:
        engine.dispose()


def test_huey_tables_are_left_out_of_the_schema_comparison(database_url):
    """PostgresHuey keeps its huey_* tables in our database; autogenerate must neither see nor drop them."""
    engine = _engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE huey_task (id INTEGER PRIMARY KEY, queue TEXT)"))
    engine.dispose()
    result = _flask_db(database_url, "check")
    assert "No new upgrade operations detected" in result.stdout + result.stderr


def test_the_guard_reads_archived_keys_and_plans_per_call_on_postgresql(database_url, backend):
    """Migration 0012: the guard refuses an active row beside an archived published key (not beside an
    archived failed one); PostgreSQL plans the guard's lookups per call."""
    engine = _engine(database_url)
    now = "2026-06-01 12:00:00"
    with engine.begin() as conn:
        if backend == "postgresql":
            config = conn.execute(text("SELECT proconfig FROM pg_proc WHERE proname = 'tickwork_publish_guard'"))
            assert config.scalar_one() == ["plan_cache_mode=force_custom_plan"]
        workspace = conn.execute(text("INSERT INTO workspaces (name, timezone, plan, created_at) "
                                      "VALUES ('Kept', 'UTC', 'free', :now) RETURNING id"), {"now": now}).scalar()
        channel = conn.execute(text("INSERT INTO channels (workspace_id, name, kind, config, created_at) "
                                    "VALUES (:ws, 'main', 'log', '{}', :now) RETURNING id"),
                               {"ws": workspace, "now": now}).scalar()
        for thing, published in (("sent", True), ("failed", False)):
            conn.execute(text("INSERT INTO archived_action_keys (workspace_id, action_type, thing_id, target_key, "
                              "published, archived_at) VALUES (:ws, 'send_email', :thing, 't', :published, :now)"),
                         {"ws": workspace, "thing": thing, "published": published, "now": now})

    def insert_queued(thing: str) -> str | None:
        try:
            with engine.begin() as conn:
                conn.execute(text(
                    "INSERT INTO scheduled_actions (workspace_id, action_type, thing_id, target_key, channel_id, "
                    "payload, publish_at, status, attempt_count, origin, created_at, updated_at) VALUES (:ws, "
                    "'send_email', :thing, 't', :channel, '{}', :now, 'queued', 0, 'person', :now, :now)"),
                    {"ws": workspace, "channel": channel, "thing": thing, "now": now})
        except Exception as exc:  # the driver's integrity error, whatever its class
            return str(exc)
        return None

    assert "duplicate-publish guard" in (insert_queued("sent") or "")
    assert insert_queued("failed") is None
    engine.dispose()
