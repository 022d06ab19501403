"""channel limits: the throttle each channel shares across consumers, and the rows it holds back

Two new tables; scheduled_actions is not altered, so its triggers (the publish guard) stay
as they are on both dialects.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 00:30:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('channel_throttles',
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('next_slot_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('line_until', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('paused_until', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('pause_reason', sa.Text(), nullable=True),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_channel_throttles_channel_id_channels'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('channel_id', name=op.f('pk_channel_throttles'))
    )
    op.create_table('action_holds',
    sa.Column('action_id', sa.Integer(), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('held_until', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('late_from', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('cause', sa.String(length=16), nullable=False),
    sa.Column('held_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("cause IN ('rate', 'concurrency', 'paused')", name=op.f('ck_action_holds_cause')),
    sa.CheckConstraint('late_from <= held_until', name=op.f('ck_action_holds_late_from_before_held_until')),
    sa.ForeignKeyConstraint(['action_id'], ['scheduled_actions.id'], name=op.f('fk_action_holds_action_id_scheduled_actions'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_action_holds_channel_id_channels'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('action_id', name=op.f('pk_action_holds'))
    )
    with op.batch_alter_table('action_holds', schema=None) as batch_op:
        batch_op.create_index('ix_action_holds_channel_held_until', ['channel_id', 'held_until'], unique=False)


def downgrade():
    with op.batch_alter_table('action_holds', schema=None) as batch_op:
        batch_op.drop_index('ix_action_holds_channel_held_until')
    op.drop_table('action_holds')
    op.drop_table('channel_throttles')
