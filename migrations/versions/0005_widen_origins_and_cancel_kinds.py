"""widen origins and cancel kinds for the wings, once

Origins: reconciler, person, recurring, drip, system. Cancel kinds: person, rescheduled,
orphaned, paused, exited (the brief's "Decisions for the wings"). Only CHECK constraints
change. On SQLite that means rebuilding scheduled_actions, which drops its triggers, so
this revision carries its own copy of the publish guard and installs it again.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 23:40:00

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

WIDE = {
    "origin": "origin IN ('reconciler', 'person', 'recurring', 'drip', 'system')",
    "cancel_kind": "cancel_kind IS NULL OR cancel_kind IN ('person', 'rescheduled', 'orphaned', 'paused', 'exited')",
}
NARROW = {
    "origin": "origin IN ('reconciler', 'person', 'recurring')",
    "cancel_kind": "cancel_kind IS NULL OR cancel_kind IN ('person', 'rescheduled', 'orphaned')",
}

# The publish guard as this revision installs it on SQLite (PostgreSQL keeps its trigger
# through an ALTER TABLE): this revision's own copy, never imported from the models.
GUARD_MESSAGE = "duplicate-publish guard: published sibling exists"
_SQLITE_GUARD_BODY = f"""
    WHEN NEW.status IN ('queued', 'submitted') AND NEW.thing_id IS NOT NULL
    BEGIN
      SELECT RAISE(ABORT, '{GUARD_MESSAGE}')
      WHERE EXISTS (
        SELECT 1 FROM scheduled_actions s
        WHERE s.workspace_id = NEW.workspace_id
          AND s.action_type = NEW.action_type
          AND s.thing_id = NEW.thing_id
          AND s.target_key = NEW.target_key
          AND s.status = 'published'
          AND s.id IS NOT NEW.id);
    END
"""
SQLITE_GUARD = [
    "DROP TRIGGER IF EXISTS scheduled_actions_publish_guard_insert",
    "DROP TRIGGER IF EXISTS scheduled_actions_publish_guard_update",
    f"CREATE TRIGGER scheduled_actions_publish_guard_insert BEFORE INSERT ON scheduled_actions {_SQLITE_GUARD_BODY}",
    f"CREATE TRIGGER scheduled_actions_publish_guard_update BEFORE UPDATE ON scheduled_actions {_SQLITE_GUARD_BODY}",
]

# A SQLite rebuild keeps plain indexes but not the WHERE of partial ones: they are made again.
PARTIAL_INDEXES = [
    ("ix_scheduled_actions_queued_due", ["publish_at", "id"], False, "status = 'queued'"),
    ("ux_scheduled_actions_active_thing_target", ["workspace_id", "action_type", "thing_id", "target_key"], True,
     "status IN ('queued', 'submitted')"),
    ("ix_scheduled_actions_submitted", ["submitted_at"], False, "status = 'submitted'"),
]


def _replace_checks(checks: dict[str, str]) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for name, condition in checks.items():
            op.drop_constraint(op.f(f"ck_scheduled_actions_{name}"), "scheduled_actions", type_="check")
            op.create_check_constraint(op.f(f"ck_scheduled_actions_{name}"), "scheduled_actions", condition)
        return
    with op.batch_alter_table("scheduled_actions", recreate="always") as batch_op:
        for name, condition in checks.items():
            batch_op.drop_constraint(op.f(f"ck_scheduled_actions_{name}"), type_="check")
            batch_op.create_check_constraint(op.f(f"ck_scheduled_actions_{name}"), condition)
    for name, columns, unique, where in PARTIAL_INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
        op.create_index(name, "scheduled_actions", columns, unique=unique, sqlite_where=sa.text(where))
    for statement in SQLITE_GUARD:
        op.execute(statement)


def upgrade():
    _replace_checks(WIDE)


def downgrade():
    _replace_checks(NARROW)
