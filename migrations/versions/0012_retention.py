"""retention: archived keys beside the live rows, the archive index and lease; the guard reads both

- ``archived_action_keys``: one row per key (workspace, action type, thing, target) whose
  published, failed or person-cancelled rows retention moved to an archive file. The
  reconciler's and the expander's terminal-history gates read it beside the live rows.
- ``archived_actions``: which archive file holds a pruned action id.
- ``retention_leases``: one host archives at a time.
- The publish guard now also refuses an active row whose key has an archived published
  row. This revision carries its own copy of the guard's SQL (old and new, both dialects);
  no table is rebuilt, so SQLite's partial indexes are untouched. On PostgreSQL the guard
  function plans its lookups for each call (``plan_cache_mode = force_custom_plan``): the
  generic plans of its parameterised lookups were measured slow.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 04:00:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

GUARD_MESSAGE = "duplicate-publish guard: published sibling exists"

_LIVE_SIBLING = """
    SELECT 1 FROM scheduled_actions s
    WHERE s.workspace_id = NEW.workspace_id
      AND s.action_type = NEW.action_type
      AND s.thing_id = NEW.thing_id
      AND s.target_key = NEW.target_key
      AND s.status = 'published'
      AND s.id {ne} NEW.id
"""
_ARCHIVED_SIBLING = """
    SELECT 1 FROM archived_action_keys k
    WHERE k.workspace_id = NEW.workspace_id
      AND k.action_type = NEW.action_type
      AND k.thing_id = NEW.thing_id
      AND k.target_key = NEW.target_key
      AND k.published
"""


def _postgres_function(with_archive: bool) -> str:
    test = f"EXISTS ({_LIVE_SIBLING.format(ne='<>')})"
    if with_archive:
        test += f" OR EXISTS ({_ARCHIVED_SIBLING})"
    return f"""
    CREATE OR REPLACE FUNCTION tickwork_publish_guard() RETURNS trigger AS $$
    BEGIN
      IF NEW.status IN ('queued', 'submitted') AND NEW.thing_id IS NOT NULL THEN
        IF {test} THEN
          RAISE EXCEPTION '{GUARD_MESSAGE}' USING ERRCODE = '23505';
        END IF;
      END IF;
      RETURN NEW;
    END;
    $$ LANGUAGE plpgsql
    """


def _sqlite_triggers(with_archive: bool) -> list[str]:
    # NEW.id may be NULL in a BEFORE INSERT trigger on SQLite: IS NOT treats NULL as a value.
    test = f"EXISTS ({_LIVE_SIBLING.format(ne='IS NOT')})"
    if with_archive:
        test += f" OR EXISTS ({_ARCHIVED_SIBLING})"
    body = f"""
    WHEN NEW.status IN ('queued', 'submitted') AND NEW.thing_id IS NOT NULL
    BEGIN
      SELECT RAISE(ABORT, '{GUARD_MESSAGE}')
      WHERE {test};
    END
    """
    return [
        "DROP TRIGGER IF EXISTS scheduled_actions_publish_guard_insert",
        "DROP TRIGGER IF EXISTS scheduled_actions_publish_guard_update",
        f"CREATE TRIGGER scheduled_actions_publish_guard_insert BEFORE INSERT ON scheduled_actions {body}",
        f"CREATE TRIGGER scheduled_actions_publish_guard_update BEFORE UPDATE ON scheduled_actions {body}",
    ]


def _install_guard(with_archive: bool) -> None:
    if op.get_bind().dialect.name == "postgresql":
        # CREATE OR REPLACE keeps the trigger bound to the function and resets its settings.
        op.execute(_postgres_function(with_archive))
        if with_archive:
            op.execute("ALTER FUNCTION tickwork_publish_guard() SET plan_cache_mode = force_custom_plan")
    else:
        for statement in _sqlite_triggers(with_archive):
            op.execute(statement)


def upgrade():
    op.create_table('archived_action_keys',
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('action_type', sa.String(length=64), nullable=False),
    sa.Column('thing_id', sa.String(length=128), nullable=False),
    sa.Column('target_key', sa.String(length=255), nullable=False),
    sa.Column('published', sa.Boolean(), nullable=False),
    sa.Column('archived_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_archived_action_keys_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('workspace_id', 'action_type', 'thing_id', 'target_key', name=op.f('pk_archived_action_keys'))
    )
    op.create_table('archived_actions',
    sa.Column('action_id', sa.Integer(), autoincrement=False, nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('file', sa.String(length=255), nullable=False),
    sa.Column('archived_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_archived_actions_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('action_id', name=op.f('pk_archived_actions'))
    )
    op.create_index('ix_archived_actions_workspace', 'archived_actions', ['workspace_id', 'action_id'], unique=False)
    op.create_table('retention_leases',
    sa.Column('name', sa.String(length=32), nullable=False),
    sa.Column('holder', sa.String(length=255), nullable=False),
    sa.Column('taken_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_retention_leases'))
    )
    _install_guard(with_archive=True)


def downgrade():
    # The guard must stop reading archived_action_keys before the table goes.
    _install_guard(with_archive=False)
    op.drop_table('retention_leases')
    op.drop_index('ix_archived_actions_workspace', table_name='archived_actions')
    op.drop_table('archived_actions')
    op.drop_table('archived_action_keys')
