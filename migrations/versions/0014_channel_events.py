"""channel events: who changed where a channel sends, and its secret, and when

One new table; scheduled_actions is not altered, so its triggers (the publish guard) stay
as they are on both dialects.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 22:00:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('channel_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('actor_user_id', sa.Integer(), nullable=True),
    sa.Column('change', sa.String(length=32), nullable=False),
    sa.Column('detail', sa.JSON(), nullable=False),
    sa.CheckConstraint("change IN ('created', 'destination_changed', 'secret_replaced', 'secret_removed')", name=op.f('ck_channel_events_change')),
    sa.ForeignKeyConstraint(['actor_user_id'], ['users.id'], name=op.f('fk_channel_events_actor_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_channel_events_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_channel_events_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_channel_events'))
    )
    with op.batch_alter_table('channel_events', schema=None) as batch_op:
        batch_op.create_index('ix_channel_events_channel_at', ['channel_id', 'at'], unique=False)


def downgrade():
    with op.batch_alter_table('channel_events', schema=None) as batch_op:
        batch_op.drop_index('ix_channel_events_channel_at')
    op.drop_table('channel_events')
