"""The publish guard: no active row beside a published sibling, enforced by the database.

A trigger, not a unique index: history may legitimately hold duplicate published rows
(provider redelivery, manual reposts), which an index would refuse to build over. The
trigger inspects only the row being written. Both dialects get one; both surface in the
application as :class:`PublishGuardViolation` through :func:`classify_integrity_error`.

Retention prunes old published rows; their keys stay in ``archived_action_keys``
(:mod:`models.actions.archived_keys`), which the guard reads beside the live rows.

This module holds the guard as the latest migration installs it, for code that takes it
off and puts it back (the benchmarks' bulk loads of history). The migrations never import
it: each revision that installs or re-installs the guard carries its own copy of the SQL,
so a later change here never rewrites what an old revision did (a SQLite batch migration
recreates ``scheduled_actions`` and silently drops its triggers, so such a revision
re-installs the guard from its own copy).
"""

from sqlalchemy.exc import IntegrityError

GUARD_MESSAGE = "duplicate-publish guard: published sibling exists"

_SIBLING_PUBLISHED = """
    SELECT 1 FROM scheduled_actions s
    WHERE s.workspace_id = NEW.workspace_id
      AND s.action_type = NEW.action_type
      AND s.thing_id = NEW.thing_id
      AND s.target_key = NEW.target_key
      AND s.status = 'published'
      AND s.id {ne} NEW.id
"""

# A key whose published history retention moved to an archive file.
_ARCHIVED_PUBLISHED = """
    SELECT 1 FROM archived_action_keys k
    WHERE k.workspace_id = NEW.workspace_id
      AND k.action_type = NEW.action_type
      AND k.thing_id = NEW.thing_id
      AND k.target_key = NEW.target_key
      AND k.published
"""

POSTGRES_DDL = [
    f"""
    CREATE OR REPLACE FUNCTION tickwork_publish_guard() RETURNS trigger AS $$
    BEGIN
      IF NEW.status IN ('queued', 'submitted') AND NEW.thing_id IS NOT NULL THEN
        IF EXISTS ({_SIBLING_PUBLISHED.format(ne="<>")}) OR EXISTS ({_ARCHIVED_PUBLISHED}) THEN
          RAISE EXCEPTION '{GUARD_MESSAGE}' USING ERRCODE = '23505';
        END IF;
      END IF;
      RETURN NEW;
    END;
    $$ LANGUAGE plpgsql
    """,
    # Plan the lookups for each call: generic plans of them were measured slow.
    "ALTER FUNCTION tickwork_publish_guard() SET plan_cache_mode = force_custom_plan",
    "DROP TRIGGER IF EXISTS scheduled_actions_publish_guard ON scheduled_actions",
    """
    CREATE TRIGGER scheduled_actions_publish_guard
    BEFORE INSERT OR UPDATE ON scheduled_actions
    FOR EACH ROW EXECUTE FUNCTION tickwork_publish_guard()
    """,
]

# On SQLite a BEFORE INSERT trigger may see NEW.id as NULL, so the sibling test uses
# IS NOT, which treats NULL as a value (``<>`` would make the whole test unknown).
_SQLITE_BODY = f"""
    WHEN NEW.status IN ('queued', 'submitted') AND NEW.thing_id IS NOT NULL
    BEGIN
      SELECT RAISE(ABORT, '{GUARD_MESSAGE}')
      WHERE EXISTS ({_SIBLING_PUBLISHED.format(ne="IS NOT")}) OR EXISTS ({_ARCHIVED_PUBLISHED});
    END
"""

SQLITE_DDL = [
    "DROP TRIGGER IF EXISTS scheduled_actions_publish_guard_insert",
    "DROP TRIGGER IF EXISTS scheduled_actions_publish_guard_update",
    f"CREATE TRIGGER scheduled_actions_publish_guard_insert BEFORE INSERT ON scheduled_actions {_SQLITE_BODY}",
    f"CREATE TRIGGER scheduled_actions_publish_guard_update BEFORE UPDATE ON scheduled_actions {_SQLITE_BODY}",
]


def install_publish_guard(connection) -> None:
    """(Re-)create the guard on ``connection``'s dialect."""
    statements = POSTGRES_DDL if connection.dialect.name == "postgresql" else SQLITE_DDL
    for statement in statements:
        connection.exec_driver_sql(statement)


def drop_publish_guard(connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("DROP TRIGGER IF EXISTS scheduled_actions_publish_guard ON scheduled_actions")
        connection.exec_driver_sql("DROP FUNCTION IF EXISTS tickwork_publish_guard()")
    else:
        for statement in SQLITE_DDL[:2]:
            connection.exec_driver_sql(statement)


class PublishGuardViolation(Exception):
    """An active row was written beside a published sibling; the database refused it."""


class DuplicateActiveAction(Exception):
    """A second active row for the same (action type, thing, target) was refused."""


def classify_integrity_error(exc: IntegrityError) -> Exception | None:
    """Map a driver's integrity error to one of Tickwork's typed errors, or None."""
    message = str(exc.orig)
    if GUARD_MESSAGE in message:
        return PublishGuardViolation(GUARD_MESSAGE)
    if "ux_scheduled_actions_active_thing_target" in message or (
        "UNIQUE constraint failed: scheduled_actions.workspace_id, scheduled_actions.action_type" in message
    ):
        return DuplicateActiveAction("an active row for this (action type, thing, target) already exists")
    return None
