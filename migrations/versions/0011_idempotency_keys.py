"""idempotency keys in a table of their own, out of scheduled_actions

A key now names a request (workspace, token, key), with a fingerprint of the request and
the answer to replay. Keys stored on scheduled_actions are not carried over: they only
answered retries within a day, and a retry of a request sent before the upgrade creates its
row again. On SQLite dropping the column rebuilds
scheduled_actions, which drops its triggers and the WHERE of its partial indexes: this
revision carries its own copy of the publish guard and makes both again.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 01:10:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

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
PARTIAL_INDEXES = [
    ("ix_scheduled_actions_queued_due", ["publish_at", "id"], False, "status = 'queued'"),
    ("ux_scheduled_actions_active_thing_target", ["workspace_id", "action_type", "thing_id", "target_key"], True,
     "status IN ('queued', 'submitted')"),
    ("ix_scheduled_actions_submitted", ["submitted_at"], False, "status = 'submitted'"),
]


def _after_sqlite_rebuild() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    for name, columns, unique, where in PARTIAL_INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
        op.create_index(name, "scheduled_actions", columns, unique=unique, sqlite_where=sa.text(where))
    for statement in SQLITE_GUARD:
        op.execute(statement)


def upgrade():
    op.create_table('idempotency_keys',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('token_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=255), nullable=False),
    sa.Column('fingerprint', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('response_status', sa.Integer(), nullable=True),
    sa.Column('response_body', sa.JSON(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['token_id'], ['api_tokens.id'], name=op.f('fk_idempotency_keys_token_id_api_tokens'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_idempotency_keys_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_idempotency_keys'))
    )
    with op.batch_alter_table('idempotency_keys', schema=None) as batch_op:
        batch_op.create_index('ix_idempotency_keys_created_at', ['created_at'], unique=False)
        batch_op.create_index('ux_idempotency_keys_workspace_token_key', ['workspace_id', 'token_id', 'key'], unique=True)

    with op.batch_alter_table('scheduled_actions', schema=None) as batch_op:
        batch_op.drop_index('ux_scheduled_actions_idempotency')
        batch_op.drop_column('idempotency_key')
    _after_sqlite_rebuild()


def downgrade():
    with op.batch_alter_table('scheduled_actions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('idempotency_key', sa.String(length=255), nullable=True))
        batch_op.create_index('ux_scheduled_actions_idempotency', ['workspace_id', 'idempotency_key'], unique=True)
    _after_sqlite_rebuild()
    with op.batch_alter_table('idempotency_keys', schema=None) as batch_op:
        batch_op.drop_index('ux_idempotency_keys_workspace_token_key')
        batch_op.drop_index('ix_idempotency_keys_created_at')
    op.drop_table('idempotency_keys')
