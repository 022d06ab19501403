"""calendar feed tokens: the hashed secret of each person's iCalendar feed of a workspace

One new table; scheduled_actions is not altered, so its triggers (the publish guard) stay
as they are on both dialects.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 04:00:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('calendar_feed_tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('revoked_why', sa.String(length=32), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_calendar_feed_tokens_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_calendar_feed_tokens_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_calendar_feed_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_calendar_feed_tokens_token_hash'))
    )
    with op.batch_alter_table('calendar_feed_tokens', schema=None) as batch_op:
        batch_op.create_index('ix_calendar_feed_tokens_member', ['workspace_id', 'user_id'], unique=False)


def downgrade():
    with op.batch_alter_table('calendar_feed_tokens', schema=None) as batch_op:
        batch_op.drop_index('ix_calendar_feed_tokens_member')
    op.drop_table('calendar_feed_tokens')
