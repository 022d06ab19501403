"""recurring rules and their events

Recurring rules (the playbook's section 10) and one event row per change of a rule. Rows
minted from a rule use columns scheduled_actions already has (origin 'recurring',
recurring_schedule_id, thing_id "rule:<id>:<slot>" under the existing dedupe index), so
this revision does not touch scheduled_actions and the publish guard's triggers stay as
they are.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-30 23:53:01.509621

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('recurring_schedules',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('action_type', sa.String(length=64), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('target_key', sa.String(length=255), nullable=False),
    sa.Column('payload', sa.JSON(), nullable=False),
    sa.Column('rrule', sa.String(length=500), nullable=False),
    sa.Column('starts_local', sa.DateTime(), nullable=False),
    sa.Column('starts_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('ends_local', sa.DateTime(), nullable=True),
    sa.Column('ends_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('exdates_local', sa.JSON(), nullable=False),
    sa.Column('misfire', sa.String(length=16), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('status_note', sa.Text(), nullable=True),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('last_materialized_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('paused_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('ended_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.CheckConstraint("misfire IN ('skip', 'fire_once')", name=op.f('ck_recurring_schedules_misfire')),
    sa.CheckConstraint("status IN ('active', 'paused', 'ended')", name=op.f('ck_recurring_schedules_status')),
    sa.CheckConstraint('revision >= 1', name=op.f('ck_recurring_schedules_revision')),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_recurring_schedules_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_recurring_schedules_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_recurring_schedules_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recurring_schedules'))
    )
    with op.batch_alter_table('recurring_schedules', schema=None) as batch_op:
        batch_op.create_index('ix_recurring_schedules_active', ['id'], unique=False, postgresql_where=sa.text("status = 'active'"), sqlite_where=sa.text("status = 'active'"))
        batch_op.create_index('ix_recurring_schedules_workspace_id', ['workspace_id', 'id'], unique=False)

    op.create_table('recurring_schedule_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('schedule_id', sa.Integer(), nullable=False),
    sa.Column('from_status', sa.String(length=16), nullable=True),
    sa.Column('to_status', sa.String(length=16), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('actor_user_id', sa.Integer(), nullable=True),
    sa.Column('clock_run_id', sa.Integer(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('action_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['action_id'], ['scheduled_actions.id'], name=op.f('fk_recurring_schedule_events_action_id_scheduled_actions'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['actor_user_id'], ['users.id'], name=op.f('fk_recurring_schedule_events_actor_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['clock_run_id'], ['clock_runs.id'], name=op.f('fk_recurring_schedule_events_clock_run_id_clock_runs'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['schedule_id'], ['recurring_schedules.id'], name=op.f('fk_recurring_schedule_events_schedule_id_recurring_schedules'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recurring_schedule_events'))
    )
    with op.batch_alter_table('recurring_schedule_events', schema=None) as batch_op:
        batch_op.create_index('ix_recurring_schedule_events_schedule_id', ['schedule_id', 'id'], unique=False)


def downgrade():
    with op.batch_alter_table('recurring_schedule_events', schema=None) as batch_op:
        batch_op.drop_index('ix_recurring_schedule_events_schedule_id')

    op.drop_table('recurring_schedule_events')
    with op.batch_alter_table('recurring_schedules', schema=None) as batch_op:
        batch_op.drop_index('ix_recurring_schedules_workspace_id')
        batch_op.drop_index('ix_recurring_schedules_active', postgresql_where=sa.text("status = 'active'"), sqlite_where=sa.text("status = 'active'"))

    op.drop_table('recurring_schedules')