"""sign-in sessions, named and expiring API tokens, invitations, two-factor sign-in

New tables (user_sessions, recovery_codes, invitations) and new nullable columns on users,
workspaces and api_tokens; scheduled_actions is not altered, so its triggers (the publish
guard) stay as they are on both dialects.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-02 01:00:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('user_sessions',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('user_agent', sa.String(length=200), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('last_seen_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('ended_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('ended_why', sa.String(length=32), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_user_sessions_user_id_users'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_user_sessions')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_user_sessions_token_hash'))
    )
    with op.batch_alter_table('user_sessions', schema=None) as batch_op:
        batch_op.create_index('ix_user_sessions_user_live', ['user_id', 'ended_at'], unique=False)

    op.create_table('recovery_codes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('code_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('used_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_recovery_codes_user_id_users'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recovery_codes'))
    )
    with op.batch_alter_table('recovery_codes', schema=None) as batch_op:
        batch_op.create_index('ix_recovery_codes_user_id', ['user_id'], unique=False)

    op.create_table('invitations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('invited_by', sa.Integer(), nullable=True),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('accepted_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('declined_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['invited_by'], ['users.id'], name=op.f('fk_invitations_invited_by_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_invitations_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_invitations'))
    )
    with op.batch_alter_table('invitations', schema=None) as batch_op:
        batch_op.create_index('ix_invitations_workspace_email', ['workspace_id', 'email'], unique=False)
        batch_op.create_index('ix_invitations_email', ['email'], unique=False)

    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('password_changed_at', models.core.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('totp_secret', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('totp_enabled_at', models.core.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('totp_last_step', sa.Integer(), nullable=True))

    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.add_column(sa.Column('admins_need_two_factor', sa.Boolean(), server_default=sa.false(), nullable=False))

    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.add_column(sa.Column('name', sa.String(length=100), nullable=True))
        batch_op.add_column(sa.Column('expires_at', models.core.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('last_used_at', models.core.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('revoked_why', sa.String(length=32), nullable=True))


def downgrade():
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_column('revoked_why')
        batch_op.drop_column('last_used_at')
        batch_op.drop_column('expires_at')
        batch_op.drop_column('name')

    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.drop_column('admins_need_two_factor')

    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('totp_last_step')
        batch_op.drop_column('totp_enabled_at')
        batch_op.drop_column('totp_secret')
        batch_op.drop_column('password_changed_at')

    with op.batch_alter_table('invitations', schema=None) as batch_op:
        batch_op.drop_index('ix_invitations_email')
        batch_op.drop_index('ix_invitations_workspace_email')
    op.drop_table('invitations')

    with op.batch_alter_table('recovery_codes', schema=None) as batch_op:
        batch_op.drop_index('ix_recovery_codes_user_id')
    op.drop_table('recovery_codes')

    with op.batch_alter_table('user_sessions', schema=None) as batch_op:
        batch_op.drop_index('ix_user_sessions_user_live')
    op.drop_table('user_sessions')
