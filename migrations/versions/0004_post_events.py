"""post events: one row per status change of a post

Posts get the same lifecycle pattern as scheduled actions. This revision does not touch
scheduled_actions, so the publish guard's triggers stay as they are.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 23:33:19.255614

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('post_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('post_id', sa.Integer(), nullable=False),
    sa.Column('from_status', sa.String(length=16), nullable=True),
    sa.Column('to_status', sa.String(length=16), nullable=False),
    sa.Column('at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('actor', sa.String(length=255), nullable=False),
    sa.Column('actor_user_id', sa.Integer(), nullable=True),
    sa.Column('clock_run_id', sa.Integer(), nullable=True),
    sa.Column('reason', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['actor_user_id'], ['users.id'], name=op.f('fk_post_events_actor_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['clock_run_id'], ['clock_runs.id'], name=op.f('fk_post_events_clock_run_id_clock_runs'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_post_events_post_id_posts'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_post_events'))
    )
    with op.batch_alter_table('post_events', schema=None) as batch_op:
        batch_op.create_index('ix_post_events_post_id', ['post_id', 'id'], unique=False)



def downgrade():
    with op.batch_alter_table('post_events', schema=None) as batch_op:
        batch_op.drop_index('ix_post_events_post_id')

    op.drop_table('post_events')
