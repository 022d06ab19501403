"""drips: campaigns, versions of steps, contacts, enrollments, sends, their events; staged CSV imports

Drip campaigns (the playbook's section 11) and the shared CSV import's staging tables. New
tables only: scheduled_actions is not touched (origin 'drip' and the cancel kinds 'paused'
and 'exited' were widened by 0005), so the publish guard's triggers stay as they are.

drip_enrollments.waiting_send_id has no foreign key on purpose: drip_sends references
drip_enrollments, and the pair is kept consistent by the guarded moves.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-01 00:00:26.748569

"""
import sqlalchemy as sa
from alembic import op

import models.core.types


# revision identifiers, used by Alembic.
revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('csv_imports',
    sa.Column('id', sa.String(length=32), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('target', sa.String(length=64), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('columns', sa.JSON(), nullable=False),
    sa.Column('line_count', sa.Integer(), nullable=False),
    sa.Column('accepted_count', sa.Integer(), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('committed_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.CheckConstraint("status IN ('staged', 'committing', 'committed')", name=op.f('ck_csv_imports_status')),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_csv_imports_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_csv_imports_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_csv_imports'))
    )
    with op.batch_alter_table('csv_imports', schema=None) as batch_op:
        batch_op.create_index('ix_csv_imports_expires_at', ['expires_at'], unique=False)

    op.create_table('drip_contacts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=True),
    sa.Column('phone', sa.String(length=16), nullable=True),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('timezone', sa.String(length=64), nullable=True),
    sa.Column('attributes', sa.JSON(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('unsubscribed_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('bounced_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("status IN ('subscribed', 'unsubscribed', 'bounced')", name=op.f('ck_drip_contacts_status')),
    sa.CheckConstraint('email IS NOT NULL OR phone IS NOT NULL', name=op.f('ck_drip_contacts_has_address')),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_drip_contacts_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_drip_contacts_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_contacts'))
    )
    with op.batch_alter_table('drip_contacts', schema=None) as batch_op:
        batch_op.create_index('ux_drip_contacts_workspace_email', ['workspace_id', 'email'], unique=True)
        batch_op.create_index('ux_drip_contacts_workspace_phone', ['workspace_id', 'phone'], unique=True)

    op.create_table('csv_import_lines',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('import_id', sa.String(length=32), nullable=False),
    sa.Column('line_number', sa.Integer(), nullable=False),
    sa.Column('values', sa.JSON(), nullable=False),
    sa.Column('fate', sa.String(length=32), nullable=False),
    sa.Column('accepted', sa.Boolean(), nullable=False),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('committed_fate', sa.String(length=32), nullable=True),
    sa.Column('committed_message', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['import_id'], ['csv_imports.id'], name=op.f('fk_csv_import_lines_import_id_csv_imports'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_csv_import_lines'))
    )
    with op.batch_alter_table('csv_import_lines', schema=None) as batch_op:
        batch_op.create_index('ux_csv_import_lines_import_line', ['import_id', 'line_number'], unique=True)

    op.create_table('drip_campaigns',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('send_window', sa.JSON(), nullable=True),
    sa.Column('on_failure', sa.String(length=8), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('activated_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('paused_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('archived_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.CheckConstraint("on_failure IN ('exit', 'skip')", name=op.f('ck_drip_campaigns_on_failure')),
    sa.CheckConstraint("status IN ('draft', 'active', 'paused', 'archived')", name=op.f('ck_drip_campaigns_status')),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_drip_campaigns_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_drip_campaigns_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_drip_campaigns_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_campaigns'))
    )
    with op.batch_alter_table('drip_campaigns', schema=None) as batch_op:
        batch_op.create_index('ux_drip_campaigns_workspace_name', ['workspace_id', 'name'], unique=True)

    op.create_table('drip_contact_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('contact_id', sa.Integer(), nullable=False),
    sa.Column('from_status', sa.String(length=16), nullable=True),
    sa.Column('to_status', sa.String(length=16), nullable=False),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('actor_user_id', sa.Integer(), nullable=True),
    sa.Column('clock_run_id', sa.Integer(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['actor_user_id'], ['users.id'], name=op.f('fk_drip_contact_events_actor_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['clock_run_id'], ['clock_runs.id'], name=op.f('fk_drip_contact_events_clock_run_id_clock_runs'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['contact_id'], ['drip_contacts.id'], name=op.f('fk_drip_contact_events_contact_id_drip_contacts'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_contact_events'))
    )
    with op.batch_alter_table('drip_contact_events', schema=None) as batch_op:
        batch_op.create_index('ix_drip_contact_events_contact', ['contact_id', 'id'], unique=False)

    op.create_table('drip_campaign_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=False),
    sa.Column('from_status', sa.String(length=16), nullable=True),
    sa.Column('to_status', sa.String(length=16), nullable=False),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('actor_user_id', sa.Integer(), nullable=True),
    sa.Column('clock_run_id', sa.Integer(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['actor_user_id'], ['users.id'], name=op.f('fk_drip_campaign_events_actor_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['campaign_id'], ['drip_campaigns.id'], name=op.f('fk_drip_campaign_events_campaign_id_drip_campaigns'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['clock_run_id'], ['clock_runs.id'], name=op.f('fk_drip_campaign_events_clock_run_id_clock_runs'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_campaign_events'))
    )
    with op.batch_alter_table('drip_campaign_events', schema=None) as batch_op:
        batch_op.create_index('ix_drip_campaign_events_campaign', ['campaign_id', 'id'], unique=False)

    op.create_table('drip_campaign_versions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=False),
    sa.Column('number', sa.Integer(), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['campaign_id'], ['drip_campaigns.id'], name=op.f('fk_drip_campaign_versions_campaign_id_drip_campaigns'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_campaign_versions'))
    )
    with op.batch_alter_table('drip_campaign_versions', schema=None) as batch_op:
        batch_op.create_index('ux_drip_campaign_versions_campaign_number', ['campaign_id', 'number'], unique=True)

    op.create_table('drip_enrollments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('campaign_id', sa.Integer(), nullable=False),
    sa.Column('version_id', sa.Integer(), nullable=False),
    sa.Column('contact_id', sa.Integer(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('current_step', sa.Integer(), nullable=False),
    sa.Column('next_send_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('anchor_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('schedule_note', sa.Text(), nullable=True),
    sa.Column('held_by_window', sa.Boolean(), nullable=False),
    sa.Column('waiting_send_id', sa.Integer(), nullable=True),
    sa.Column('enrolled_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('completed_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('exited_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('exit_reason', sa.String(length=64), nullable=True),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("status IN ('active', 'completed', 'exited')", name=op.f('ck_drip_enrollments_status')),
    sa.CheckConstraint('current_step >= 0', name=op.f('ck_drip_enrollments_current_step')),
    sa.ForeignKeyConstraint(['campaign_id'], ['drip_campaigns.id'], name=op.f('fk_drip_enrollments_campaign_id_drip_campaigns'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['contact_id'], ['drip_contacts.id'], name=op.f('fk_drip_enrollments_contact_id_drip_contacts'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_drip_enrollments_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['version_id'], ['drip_campaign_versions.id'], name=op.f('fk_drip_enrollments_version_id_drip_campaign_versions'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_drip_enrollments_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_enrollments'))
    )
    with op.batch_alter_table('drip_enrollments', schema=None) as batch_op:
        batch_op.create_index('ix_drip_enrollments_campaign_status', ['campaign_id', 'status', 'current_step'], unique=False)
        batch_op.create_index('ix_drip_enrollments_contact', ['contact_id', 'status'], unique=False)
        batch_op.create_index('ix_drip_enrollments_due', ['next_send_at', 'id'], unique=False, postgresql_where=sa.text("status = 'active' AND waiting_send_id IS NULL"), sqlite_where=sa.text("status = 'active' AND waiting_send_id IS NULL"))
        batch_op.create_index('ix_drip_enrollments_workspace_status', ['workspace_id', 'status'], unique=False)
        batch_op.create_index('ux_drip_enrollments_active_contact', ['campaign_id', 'contact_id'], unique=True, postgresql_where=sa.text("status = 'active'"), sqlite_where=sa.text("status = 'active'"))

    op.create_table('drip_steps',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('version_id', sa.Integer(), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('delay', sa.String(length=32), nullable=False),
    sa.Column('subject', sa.Text(), nullable=True),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=True),
    sa.Column('send_window', sa.JSON(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_drip_steps_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['version_id'], ['drip_campaign_versions.id'], name=op.f('fk_drip_steps_version_id_drip_campaign_versions'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_steps'))
    )
    with op.batch_alter_table('drip_steps', schema=None) as batch_op:
        batch_op.create_index('ux_drip_steps_version_position', ['version_id', 'position'], unique=True)

    op.create_table('drip_sends',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('enrollment_id', sa.Integer(), nullable=False),
    sa.Column('step_index', sa.Integer(), nullable=False),
    sa.Column('step_id', sa.Integer(), nullable=False),
    sa.Column('dedupe_key', sa.String(length=64), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('address', sa.String(length=254), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempt_id', sa.Integer(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.Column('finished_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('settled_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("status IN ('pending', 'held', 'sent', 'unknown', 'failed', 'missed', 'skipped', 'exited')", name=op.f('ck_drip_sends_status')),
    sa.ForeignKeyConstraint(['attempt_id'], ['scheduled_actions.id'], name=op.f('fk_drip_sends_attempt_id_scheduled_actions'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_drip_sends_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['enrollment_id'], ['drip_enrollments.id'], name=op.f('fk_drip_sends_enrollment_id_drip_enrollments'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['step_id'], ['drip_steps.id'], name=op.f('fk_drip_sends_step_id_drip_steps'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_drip_sends_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_sends'))
    )
    with op.batch_alter_table('drip_sends', schema=None) as batch_op:
        batch_op.create_index('ix_drip_sends_attempt', ['attempt_id'], unique=False)
        batch_op.create_index('ix_drip_sends_enrollment', ['enrollment_id', 'step_index'], unique=False)
        batch_op.create_index('ix_drip_sends_held', ['id'], unique=False, postgresql_where=sa.text("status = 'held'"), sqlite_where=sa.text("status = 'held'"))
        batch_op.create_index('ix_drip_sends_pending', ['id'], unique=False, postgresql_where=sa.text("status = 'pending'"), sqlite_where=sa.text("status = 'pending'"))
        batch_op.create_index('ux_drip_sends_dedupe_key', ['dedupe_key'], unique=True)

    op.create_table('drip_enrollment_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('enrollment_id', sa.Integer(), nullable=False),
    sa.Column('move', sa.String(length=16), nullable=False),
    sa.Column('step', sa.Integer(), nullable=True),
    sa.Column('send_id', sa.Integer(), nullable=True),
    sa.Column('from_status', sa.String(length=16), nullable=True),
    sa.Column('to_status', sa.String(length=16), nullable=False),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('actor_user_id', sa.Integer(), nullable=True),
    sa.Column('clock_run_id', sa.Integer(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['actor_user_id'], ['users.id'], name=op.f('fk_drip_enrollment_events_actor_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['clock_run_id'], ['clock_runs.id'], name=op.f('fk_drip_enrollment_events_clock_run_id_clock_runs'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['enrollment_id'], ['drip_enrollments.id'], name=op.f('fk_drip_enrollment_events_enrollment_id_drip_enrollments'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['send_id'], ['drip_sends.id'], name=op.f('fk_drip_enrollment_events_send_id_drip_sends'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_drip_enrollment_events'))
    )
    with op.batch_alter_table('drip_enrollment_events', schema=None) as batch_op:
        batch_op.create_index('ix_drip_enrollment_events_enrollment', ['enrollment_id', 'id'], unique=False)



def downgrade():
    with op.batch_alter_table('drip_enrollment_events', schema=None) as batch_op:
        batch_op.drop_index('ix_drip_enrollment_events_enrollment')

    op.drop_table('drip_enrollment_events')
    with op.batch_alter_table('drip_sends', schema=None) as batch_op:
        batch_op.drop_index('ux_drip_sends_dedupe_key')
        batch_op.drop_index('ix_drip_sends_pending', postgresql_where=sa.text("status = 'pending'"), sqlite_where=sa.text("status = 'pending'"))
        batch_op.drop_index('ix_drip_sends_held', postgresql_where=sa.text("status = 'held'"), sqlite_where=sa.text("status = 'held'"))
        batch_op.drop_index('ix_drip_sends_enrollment')
        batch_op.drop_index('ix_drip_sends_attempt')

    op.drop_table('drip_sends')
    with op.batch_alter_table('drip_steps', schema=None) as batch_op:
        batch_op.drop_index('ux_drip_steps_version_position')

    op.drop_table('drip_steps')
    with op.batch_alter_table('drip_enrollments', schema=None) as batch_op:
        batch_op.drop_index('ux_drip_enrollments_active_contact', postgresql_where=sa.text("status = 'active'"), sqlite_where=sa.text("status = 'active'"))
        batch_op.drop_index('ix_drip_enrollments_workspace_status')
        batch_op.drop_index('ix_drip_enrollments_due', postgresql_where=sa.text("status = 'active' AND waiting_send_id IS NULL"), sqlite_where=sa.text("status = 'active' AND waiting_send_id IS NULL"))
        batch_op.drop_index('ix_drip_enrollments_contact')
        batch_op.drop_index('ix_drip_enrollments_campaign_status')

    op.drop_table('drip_enrollments')
    with op.batch_alter_table('drip_campaign_versions', schema=None) as batch_op:
        batch_op.drop_index('ux_drip_campaign_versions_campaign_number')

    op.drop_table('drip_campaign_versions')
    with op.batch_alter_table('drip_campaign_events', schema=None) as batch_op:
        batch_op.drop_index('ix_drip_campaign_events_campaign')

    op.drop_table('drip_campaign_events')
    with op.batch_alter_table('drip_contact_events', schema=None) as batch_op:
        batch_op.drop_index('ix_drip_contact_events_contact')

    op.drop_table('drip_contact_events')
    with op.batch_alter_table('drip_campaigns', schema=None) as batch_op:
        batch_op.drop_index('ux_drip_campaigns_workspace_name')

    op.drop_table('drip_campaigns')
    with op.batch_alter_table('csv_import_lines', schema=None) as batch_op:
        batch_op.drop_index('ux_csv_import_lines_import_line')

    op.drop_table('csv_import_lines')
    with op.batch_alter_table('drip_contacts', schema=None) as batch_op:
        batch_op.drop_index('ux_drip_contacts_workspace_phone')
        batch_op.drop_index('ux_drip_contacts_workspace_email')

    op.drop_table('drip_contacts')
    with op.batch_alter_table('csv_imports', schema=None) as batch_op:
        batch_op.drop_index('ix_csv_imports_expires_at')

    op.drop_table('csv_imports')
