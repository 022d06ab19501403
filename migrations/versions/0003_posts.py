"""posts and their targets (channels)

Posts are what the reconciler turns into scheduled_actions rows. This migration does not
touch scheduled_actions, so the publish guard's triggers stay as they are.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 02:48:16.198283

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('posts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('media', sa.JSON(), nullable=False),
    sa.Column('wall_date', sa.Date(), nullable=False),
    sa.Column('wall_time', sa.Time(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('revision', sa.Integer(), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('approved_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('published_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('archived_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.CheckConstraint("status IN ('draft', 'approved', 'published', 'archived')", name=op.f('ck_posts_status')),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_posts_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_posts_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_posts'))
    )
    with op.batch_alter_table('posts', schema=None) as batch_op:
        batch_op.create_index('ix_posts_approved', ['workspace_id', 'id'], unique=False, postgresql_where=sa.text("status = 'approved'"), sqlite_where=sa.text("status = 'approved'"))
        batch_op.create_index('ix_posts_workspace_wall', ['workspace_id', 'wall_date', 'wall_time', 'id'], unique=False)

    op.create_table('post_targets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('post_id', sa.Integer(), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_post_targets_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_post_targets_post_id_posts'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_post_targets'))
    )
    with op.batch_alter_table('post_targets', schema=None) as batch_op:
        batch_op.create_index('ux_post_targets_post_channel', ['post_id', 'channel_id'], unique=True)



def downgrade():
    with op.batch_alter_table('post_targets', schema=None) as batch_op:
        batch_op.drop_index('ux_post_targets_post_channel')

    op.drop_table('post_targets')
    with op.batch_alter_table('posts', schema=None) as batch_op:
        batch_op.drop_index('ix_posts_workspace_wall')
        batch_op.drop_index('ix_posts_approved', postgresql_where=sa.text("status = 'approved'"), sqlite_where=sa.text("status = 'approved'"))

    op.drop_table('posts')
