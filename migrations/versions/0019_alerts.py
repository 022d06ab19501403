"""alerts: the alerts the rules raise, each workspace's rule settings, its alert destinations, members' choices

New tables only; scheduled_actions is not altered, so its triggers (the publish guard) stay
as they are on both dialects.

Revision ID: 0019
Revises: 0016
Create Date: 2026-12-02 01:03:14

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# Revisions are frozen: import column types from models, never DDL. A revision that alters
# scheduled_actions on SQLite copies the table and drops its triggers: it carries its own
# copy of the publish guard's SQL (see 0005) and re-installs it in the same revision.


# revision identifiers, used by Alembic.
revision = '0019'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('alert_preferences',
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('rule', sa.String(length=32), nullable=False),
    sa.Column('delivery', sa.String(length=16), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("delivery IN ('immediate', 'digest')", name=op.f('ck_alert_preferences_delivery')),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_alert_preferences_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_alert_preferences_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('workspace_id', 'user_id', 'rule', name=op.f('pk_alert_preferences'))
    )
    op.create_table('alert_rule_settings',
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('rule', sa.String(length=32), nullable=False),
    sa.Column('enabled', sa.Boolean(), nullable=False),
    sa.Column('threshold', sa.Double(), nullable=True),
    sa.Column('window_seconds', sa.Integer(), nullable=True),
    sa.Column('cooldown_seconds', sa.Integer(), nullable=True),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_alert_rule_settings_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('workspace_id', 'rule', name=op.f('pk_alert_rule_settings'))
    )
    op.create_table('alerts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('scope', sa.String(length=40), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=True),
    sa.Column('rule', sa.String(length=32), nullable=False),
    sa.Column('subject', sa.String(length=128), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('figures', sa.JSON(), nullable=False),
    sa.Column('fired_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('notified_n', sa.Integer(), server_default='0', nullable=False),
    sa.Column('notified_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('acknowledged_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('acknowledged_by_id', sa.Integer(), nullable=True),
    sa.Column('silenced_until', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('silenced_by_id', sa.Integer(), nullable=True),
    sa.Column('resolved_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('direct_sent_n', sa.Integer(), nullable=True),
    sa.Column('direct_sent_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('direct_resolved_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('direct_error', sa.Text(), nullable=True),
    sa.CheckConstraint("(state = 'resolved') = (resolved_at IS NOT NULL)", name=op.f('ck_alerts_resolved_iff_resolved_at')),
    sa.CheckConstraint("state IN ('firing', 'acknowledged', 'resolved')", name=op.f('ck_alerts_state')),
    sa.CheckConstraint('notified_n >= 0', name=op.f('ck_alerts_notified_n')),
    sa.ForeignKeyConstraint(['acknowledged_by_id'], ['users.id'], name=op.f('fk_alerts_acknowledged_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['silenced_by_id'], ['users.id'], name=op.f('fk_alerts_silenced_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_alerts_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alerts'))
    )
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.create_index('ix_alerts_scope_id', ['scope', 'id'], unique=False)
        batch_op.create_index('ux_alerts_open_scope_rule_subject', ['scope', 'rule', 'subject'], unique=True, postgresql_where=sa.text("state IN ('firing', 'acknowledged')"), sqlite_where=sa.text("state IN ('firing', 'acknowledged')"))

    op.create_table('alert_destinations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('recipient', sa.String(length=255), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_alert_destinations_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_alert_destinations_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_alert_destinations_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_alert_destinations'))
    )
    with op.batch_alter_table('alert_destinations', schema=None) as batch_op:
        batch_op.create_index('ux_alert_destinations_ws_channel_recipient', ['workspace_id', 'channel_id', 'recipient'], unique=True)



def downgrade():
    with op.batch_alter_table('alert_destinations', schema=None) as batch_op:
        batch_op.drop_index('ux_alert_destinations_ws_channel_recipient')

    op.drop_table('alert_destinations')
    with op.batch_alter_table('alerts', schema=None) as batch_op:
        batch_op.drop_index('ux_alerts_open_scope_rule_subject', postgresql_where=sa.text("state IN ('firing', 'acknowledged')"), sqlite_where=sa.text("state IN ('firing', 'acknowledged')"))
        batch_op.drop_index('ix_alerts_scope_id')

    op.drop_table('alerts')
    op.drop_table('alert_rule_settings')
    op.drop_table('alert_preferences')
