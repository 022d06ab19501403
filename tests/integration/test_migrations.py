"""The migrations are the schema of record: one head, equal to the models, reversible, guard intact."""

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.config import Config
from sqlalchemy import create_engine, inspect, text

from models.core.base import Base
from webapp import MIGRATIONS_DIR


def _engine(url):
    return create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))


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


GUARD_MESSAGE = "duplicate-publish guard: published sibling exists"


def _guard_objects(engine) -> dict:
    """Every trigger on scheduled_actions, and every trigger or function of the guard anywhere, as the catalogue has them.

    PostgreSQL: each trigger's name, table, function and enabled flag (pg_trigger), its events,
    timing and level (information_schema.triggers), and the guard function's language and
    whether its body raises the message with SQLSTATE 23505. SQLite: each trigger's name, table
    and the head of its SQL (sqlite_master).
    """
    with engine.connect() as conn:
        if engine.dialect.name == "postgresql":
            triggers = {tuple(r) for r in conn.execute(text(
                "SELECT t.tgname, c.relname, t.tgfoid::regproc::text, t.tgenabled FROM pg_trigger t"
                " JOIN pg_class c ON c.oid = t.tgrelid WHERE NOT t.tgisinternal"
                " AND (c.relname = 'scheduled_actions' OR t.tgfoid::regproc::text LIKE '%publish_guard%')"))}
            events = {tuple(r) for r in conn.execute(text(
                "SELECT trigger_name, event_manipulation, action_timing, action_orientation, action_statement"
                " FROM information_schema.triggers WHERE event_object_table = 'scheduled_actions'"
                " OR action_statement LIKE '%publish_guard%'"))}
            functions = {(name, language, "ERRCODE = '23505'" in body and GUARD_MESSAGE in body)
                         for name, language, body in conn.execute(text(
                             "SELECT p.proname, l.lanname, p.prosrc FROM pg_proc p JOIN pg_language l"
                             " ON l.oid = p.prolang WHERE p.proname LIKE '%publish_guard%'"))}
            return {"triggers": triggers, "events": events, "functions": functions}
        triggers = set()
        for name, table, sql in conn.execute(text("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'"
                                                  " AND (tbl_name = 'scheduled_actions' OR sql LIKE '%publish guard%')")):
            head = " ".join(sql.split()[:7])  # CREATE TRIGGER name BEFORE INSERT ON table
            triggers.add((name, table, head, f"RAISE(ABORT, '{GUARD_MESSAGE}')" in sql))
        return {"triggers": triggers}


def _expected_guard(name: str, timing_event: str) -> tuple:
    return (name, "scheduled_actions", f"CREATE TRIGGER {name} {timing_event} ON scheduled_actions", True)


EXPECTED_GUARD = {
    "postgresql": {
        "triggers": {("scheduled_actions_publish_guard", "scheduled_actions", "tickwork_publish_guard", "O")},
        "events": {("scheduled_actions_publish_guard", event, "BEFORE", "ROW", "EXECUTE FUNCTION tickwork_publish_guard()")
                   for event in ("INSERT", "UPDATE")},
        "functions": {("tickwork_publish_guard", "plpgsql", True)},
    },
    "sqlite": {"triggers": {_expected_guard("scheduled_actions_publish_guard_insert", "BEFORE INSERT"),
                            _expected_guard("scheduled_actions_publish_guard_update", "BEFORE UPDATE")}},
}
NO_GUARD = {"postgresql": {"triggers": set(), "events": set(), "functions": set()}, "sqlite": {"triggers": set()}}


def _guard_refusals(engine) -> dict[str, str]:
    """Try what the guard must refuse, and a write it must let through, on the schema as it stands.

    Beside a published row: insert a queued sibling (the insert trigger), insert a queued row for
    another thing (must pass: the statement itself is valid at this revision), then update that
    row onto the published one's thing (the update trigger). Only columns every revision has are
    written, and everything is rolled back, so the walk up and down is not disturbed. Returns
    each attempt's outcome: ``refused`` by the guard (``refused 23505`` on PostgreSQL, with the
    SQLSTATE it raised), ``accepted``, or the other error it met.
    """
    now = "2026-06-01 12:00:00"
    outcomes = {}
    with engine.connect() as conn:
        transaction = conn.begin()
        try:
            workspace = conn.execute(text("INSERT INTO workspaces (name, timezone, plan, created_at) "
                                          "VALUES ('Guarded', 'UTC', 'free', :now) RETURNING id"), {"now": now}).scalar()
            channel = conn.execute(text("INSERT INTO channels (workspace_id, name, kind, config, created_at) "
                                        "VALUES (:ws, 'main', 'log', '{}', :now) RETURNING id"),
                                   {"ws": workspace, "now": now}).scalar()
            insert = ("INSERT INTO scheduled_actions (workspace_id, action_type, thing_id, target_key, channel_id, "
                      "payload, publish_at, status, attempt_count, origin, created_at, updated_at) VALUES (:ws, "
                      "'publish_post', :thing, 'main', :channel, '{}', :now, :status, 0, 'person', :now, :now) "
                      "RETURNING id")
            values = {"ws": workspace, "channel": channel, "now": now}
            conn.execute(text(insert), {**values, "thing": "post:1", "status": "published"})
            attempts = {
                "insert beside published": (insert, {**values, "thing": "post:1", "status": "queued"}),
                "insert of another thing": (insert, {**values, "thing": "post:2", "status": "queued"}),
                "update onto published": ("UPDATE scheduled_actions SET thing_id = 'post:1' WHERE thing_id = 'post:2'",
                                          {}),
            }
            for what, (statement, params) in attempts.items():
                savepoint = conn.begin_nested()
                try:
                    conn.execute(text(statement), params)
                except Exception as exc:  # the driver's integrity error, whatever its class
                    savepoint.rollback()
                    sqlstate = getattr(exc.orig, "sqlstate", None)  # psycopg has one; sqlite3 has none
                    outcomes[what] = (f"refused {sqlstate}" if sqlstate else "refused") if GUARD_MESSAGE in str(exc) \
                        else f"error: {exc.orig}"
                else:
                    savepoint.commit()
                    outcomes[what] = "accepted"
        finally:
            transaction.rollback()
    return outcomes


GUARD_HOLDS = {backend: {"insert beside published": refused, "insert of another thing": "accepted",
                         "update onto published": refused}
               for backend, refused in (("postgresql", "refused 23505"), ("sqlite", "refused"))}


def test_the_exact_guard_triggers_refuse_after_every_migration_step_up_and_down(app, database_url, backend):
    """From base, up to the head one revision at a time, then down one at a time to the first revision
    (the one that installs the guard), then to base and back to the head, all in this process: after
    every step the guard's triggers and function are exactly the expected ones and the database
    still refuses an active row beside a published sibling, on insert and on update."""
    from flask_migrate import downgrade, upgrade

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    revisions = [rev.revision for rev in reversed(list(ScriptDirectory.from_config(config).walk_revisions()))]
    engine = _engine(database_url)
    try:
        with app.app_context():
            downgrade(directory=str(MIGRATIONS_DIR), revision="base")
            assert _guard_objects(engine) == NO_GUARD[backend]
            steps = [("up", revision) for revision in revisions] + [("down", revision)
                                                                    for revision in reversed(revisions[:-1])]
            for direction, revision in steps:
                (upgrade if direction == "up" else downgrade)(directory=str(MIGRATIONS_DIR), revision=revision)
                assert _guard_objects(engine) == EXPECTED_GUARD[backend], (direction, revision)
                assert _guard_refusals(engine) == GUARD_HOLDS[backend], (direction, revision)
            downgrade(directory=str(MIGRATIONS_DIR), revision="base")
            assert "scheduled_actions" not in inspect(engine).get_table_names()
            assert _guard_objects(engine) == NO_GUARD[backend]  # the first revision's downgrade takes all of it
            upgrade(directory=str(MIGRATIONS_DIR))
        assert _guard_objects(engine) == EXPECTED_GUARD[backend] and _guard_refusals(engine) == GUARD_HOLDS[backend]
    finally:
        engine.dispose()


def test_huey_tables_are_left_out_of_the_schema_comparison(app, database_url):
    """PostgresHuey keeps its huey_* tables in our database; autogenerate must neither see nor drop them.

    ``db check`` runs in this process, as the operator's command would run it; a stray table
    that is not Huey's is reported, so the check can tell the two apart.
    """
    from alembic import command
    from alembic.util import AutogenerateDiffsDetected

    engine = _engine(database_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE huey_task (id INTEGER PRIMARY KEY, queue TEXT)"))
    with app.app_context():
        config = app.extensions["migrate"].migrate.get_config(str(MIGRATIONS_DIR))
        command.check(config)  # raises AutogenerateDiffsDetected on any difference
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE stray_task (id INTEGER PRIMARY KEY, queue TEXT)"))
        with pytest.raises(AutogenerateDiffsDetected, match="remove_table.*stray_task"):
            command.check(config)
    engine.dispose()


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
