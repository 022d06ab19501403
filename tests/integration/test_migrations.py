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


def test_downgrade_to_base_and_upgrade_again_keeps_the_guard(database_url):
    engine = _engine(database_url)
    assert _guard_triggers(engine)
    _flask_db(database_url, "downgrade", "base")
    assert "scheduled_actions" not in inspect(engine).get_table_names()
    _flask_db(database_url, "upgrade")
    assert "scheduled_actions" in inspect(engine).get_table_names()
    assert _guard_triggers(engine)
    engine.dispose()


def test_the_guard_survives_every_migration_step(database_url):
    """Walk down and up one revision at a time; after each step up the trigger is present."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    revisions = [rev.revision for rev in ScriptDirectory.from_config(config).walk_revisions()]
    engine = _engine(database_url)
    _flask_db(database_url, "downgrade", "0001")
    for revision in reversed(revisions):
        _flask_db(database_url, "upgrade", revision)
        assert _guard_triggers(engine), f"publish guard missing after upgrade to {revision}"
    engine.dispose()


def test_huey_tables_are_left_out_of_the_schema_comparison(database_url):
    """PostgresHuey keeps its huey_* tables in our database; autogenerate must neither see nor drop them."""
    engine = _engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE huey_task (id INTEGER PRIMARY KEY, queue TEXT)"))
    engine.dispose()
    result = _flask_db(database_url, "check")
    assert "No new upgrade operations detected" in result.stdout + result.stderr
