"""works, work schedules, runs, events, usage and notifications

The works wing (the second seed, "Scheduled Work Updates") and the in-app notifications
beside accounts. Only new tables: scheduled_actions is not touched (origin "system" was
widened by 0005), so the publish guard's triggers stay as they are. The cadence CHECK lists
the seven cadences as this revision knows them: a new cadence is a later revision that
replaces the CHECK with a longer list, never a rewrite of rows.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-30 23:52:53.367515

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# Revisions are frozen: import column types from models, never DDL. A revision that alters
# scheduled_actions on SQLite copies the table and drops its triggers: it carries its own
# copy of the publish guard's SQL (see 0005) and re-installs it in the same revision.


# revision identifiers, used by Alembic.
revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('notifications',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('title', sa.String(length=200), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('subject', sa.String(length=64), nullable=True),
    sa.Column('dedupe_key', sa.String(length=128), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_notifications_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_notifications'))
    )
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.create_index('ix_notifications_workspace', ['workspace_id', 'id'], unique=False)
        batch_op.create_index('ux_notifications_workspace_dedupe', ['workspace_id', 'dedupe_key'], unique=True)

    op.create_table('works',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('pipeline', sa.String(length=64), nullable=False),
    sa.Column('settings', sa.JSON(), nullable=False),
    sa.Column('secret_sealed', sa.Text(), nullable=True),
    sa.Column('generation_status', sa.String(length=16), nullable=False),
    sa.Column('generation_token', sa.String(length=36), nullable=True),
    sa.Column('generation_started_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('generation_finished_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('deleted_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.CheckConstraint("generation_status IN ('idle', 'generating', 'generated', 'error')", name=op.f('ck_works_generation_status')),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_works_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_works_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_works'))
    )
    with op.batch_alter_table('works', schema=None) as batch_op:
        batch_op.create_index('ix_works_generating', ['generation_started_at'], unique=False, postgresql_where=sa.text("generation_status = 'generating'"), sqlite_where=sa.text("generation_status = 'generating'"))
        batch_op.create_index('ix_works_workspace', ['workspace_id', 'id'], unique=False)

    op.create_table('notification_reads',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('notification_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('read_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['notification_id'], ['notifications.id'], name=op.f('fk_notification_reads_notification_id_notifications'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_notification_reads_user_id_users'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_notification_reads'))
    )
    with op.batch_alter_table('notification_reads', schema=None) as batch_op:
        batch_op.create_index('ux_notification_reads_notification_user', ['notification_id', 'user_id'], unique=True)

    op.create_table('notification_settings',
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=True),
    sa.Column('recipient', sa.String(length=255), nullable=True),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_notification_settings_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_notification_settings_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('workspace_id', name=op.f('pk_notification_settings'))
    )
    op.create_table('work_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('work_id', sa.Integer(), nullable=False),
    sa.Column('lifecycle', sa.String(length=16), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=False),
    sa.Column('from_status', sa.String(length=16), nullable=True),
    sa.Column('to_status', sa.String(length=16), nullable=False),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('actor_user_id', sa.Integer(), nullable=True),
    sa.Column('clock_run_id', sa.Integer(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.CheckConstraint("lifecycle IN ('schedule', 'generation', 'run')", name=op.f('ck_work_events_lifecycle')),
    sa.ForeignKeyConstraint(['actor_user_id'], ['users.id'], name=op.f('fk_work_events_actor_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['clock_run_id'], ['clock_runs.id'], name=op.f('fk_work_events_clock_run_id_clock_runs'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['work_id'], ['works.id'], name=op.f('fk_work_events_work_id_works'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_work_events'))
    )
    with op.batch_alter_table('work_events', schema=None) as batch_op:
        batch_op.create_index('ix_work_events_work', ['work_id', 'id'], unique=False)

    op.create_table('work_schedules',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('work_id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('cadence', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('next_run_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('scheduled_for', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('claimed_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('claim_token', sa.String(length=36), nullable=True),
    sa.Column('anchor_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('anchor_local', sa.DateTime(), nullable=True),
    sa.Column('billing_mode', sa.String(length=16), nullable=False),
    sa.Column('max_failure_before_pause', sa.Integer(), nullable=False),
    sa.Column('failure_count', sa.Integer(), nullable=False),
    sa.Column('provider_overrides', sa.JSON(), nullable=False),
    sa.Column('last_run_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_run_status', sa.String(length=16), nullable=True),
    sa.Column('paused_reason', sa.Text(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("billing_mode IN ('subscription', 'usage')", name=op.f('ck_work_schedules_billing_mode')),
    sa.CheckConstraint("cadence IN ('hourly', 'every_3_hours', 'every_8_hours', 'every_12_hours', 'daily', 'weekly', 'monthly')", name=op.f('ck_work_schedules_cadence')),
    sa.CheckConstraint("status IN ('active', 'paused', 'canceled')", name=op.f('ck_work_schedules_status')),
    sa.CheckConstraint('(anchor_at IS NULL) <> (anchor_local IS NULL)', name=op.f('ck_work_schedules_one_anchor')),
    sa.CheckConstraint('failure_count >= 0', name=op.f('ck_work_schedules_failure_count')),
    sa.CheckConstraint('max_failure_before_pause BETWEEN 1 AND 10', name=op.f('ck_work_schedules_max_failure_before_pause')),
    sa.ForeignKeyConstraint(['work_id'], ['works.id'], name=op.f('fk_work_schedules_work_id_works'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_work_schedules_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_work_schedules')),
    sa.UniqueConstraint('work_id', name=op.f('uq_work_schedules_work_id'))
    )
    with op.batch_alter_table('work_schedules', schema=None) as batch_op:
        batch_op.create_index('ix_work_schedules_due', ['next_run_at', 'id'], unique=False, postgresql_where=sa.text("status = 'active'"), sqlite_where=sa.text("status = 'active'"))
        batch_op.create_index('ix_work_schedules_workspace', ['workspace_id', 'id'], unique=False)

    op.create_table('work_runs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('work_id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('schedule_id', sa.Integer(), nullable=True),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('slot', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('token', sa.String(length=36), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('pipeline', sa.String(length=64), nullable=False),
    sa.Column('providers', sa.JSON(), nullable=False),
    sa.Column('billing_mode', sa.String(length=16), nullable=False),
    sa.Column('started_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('deadline_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('clock_run_id', sa.Integer(), nullable=True),
    sa.CheckConstraint("billing_mode IN ('subscription', 'usage')", name=op.f('ck_work_runs_billing_mode')),
    sa.CheckConstraint("kind IN ('scheduled', 'manual')", name=op.f('ck_work_runs_kind')),
    sa.CheckConstraint("status IN ('running', 'waiting', 'succeeded', 'failed', 'lost')", name=op.f('ck_work_runs_status')),
    sa.ForeignKeyConstraint(['clock_run_id'], ['clock_runs.id'], name=op.f('fk_work_runs_clock_run_id_clock_runs'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_work_runs_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['schedule_id'], ['work_schedules.id'], name=op.f('fk_work_runs_schedule_id_work_schedules'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['work_id'], ['works.id'], name=op.f('fk_work_runs_work_id_works'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_work_runs_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_work_runs')),
    sa.UniqueConstraint('token', name=op.f('uq_work_runs_token'))
    )
    with op.batch_alter_table('work_runs', schema=None) as batch_op:
        batch_op.create_index('ix_work_runs_waiting', ['deadline_at'], unique=False, postgresql_where=sa.text("status = 'waiting'"), sqlite_where=sa.text("status = 'waiting'"))
        batch_op.create_index('ix_work_runs_work', ['work_id', 'id'], unique=False)
        batch_op.create_index('ux_work_runs_one_active_per_work', ['work_id'], unique=True, postgresql_where=sa.text("status IN ('running', 'waiting')"), sqlite_where=sa.text("status IN ('running', 'waiting')"))

    op.create_table('work_usage',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('work_id', sa.Integer(), nullable=False),
    sa.Column('run_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('cadence', sa.String(length=32), nullable=True),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('month', sa.String(length=7), nullable=False),
    sa.ForeignKeyConstraint(['run_id'], ['work_runs.id'], name=op.f('fk_work_usage_run_id_work_runs'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['work_id'], ['works.id'], name=op.f('fk_work_usage_work_id_works'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_work_usage_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_work_usage')),
    sa.UniqueConstraint('run_id', name=op.f('uq_work_usage_run_id'))
    )
    with op.batch_alter_table('work_usage', schema=None) as batch_op:
        batch_op.create_index('ix_work_usage_workspace_month', ['workspace_id', 'month'], unique=False)



def downgrade():
    with op.batch_alter_table('work_usage', schema=None) as batch_op:
        batch_op.drop_index('ix_work_usage_workspace_month')

    op.drop_table('work_usage')
    with op.batch_alter_table('work_runs', schema=None) as batch_op:
        batch_op.drop_index('ux_work_runs_one_active_per_work', postgresql_where=sa.text("status IN ('running', 'waiting')"), sqlite_where=sa.text("status IN ('running', 'waiting')"))
        batch_op.drop_index('ix_work_runs_work')
        batch_op.drop_index('ix_work_runs_waiting', postgresql_where=sa.text("status = 'waiting'"), sqlite_where=sa.text("status = 'waiting'"))

    op.drop_table('work_runs')
    with op.batch_alter_table('work_schedules', schema=None) as batch_op:
        batch_op.drop_index('ix_work_schedules_workspace')
        batch_op.drop_index('ix_work_schedules_due', postgresql_where=sa.text("status = 'active'"), sqlite_where=sa.text("status = 'active'"))

    op.drop_table('work_schedules')
    with op.batch_alter_table('work_events', schema=None) as batch_op:
        batch_op.drop_index('ix_work_events_work')

    op.drop_table('work_events')
    op.drop_table('notification_settings')
    with op.batch_alter_table('notification_reads', schema=None) as batch_op:
        batch_op.drop_index('ux_notification_reads_notification_user')

    op.drop_table('notification_reads')
    with op.batch_alter_table('works', schema=None) as batch_op:
        batch_op.drop_index('ix_works_workspace')
        batch_op.drop_index('ix_works_generating', postgresql_where=sa.text("generation_status = 'generating'"), sqlite_where=sa.text("generation_status = 'generating'"))

    op.drop_table('works')
    with op.batch_alter_table('notifications', schema=None) as batch_op:
        batch_op.drop_index('ux_notifications_workspace_dedupe')
        batch_op.drop_index('ix_notifications_workspace')

    op.drop_table('notifications')
