"""connected accounts: OAuth authorizations in flight, and each channel's refresh token and connection state

One new table (the authorization requests a Connect sends, answered at the callback) and
nullable columns on channels (the refresh token sealed beside the access token, the token's
expiry, the connected account, the reconnect-needed state, the refresh lease). Adding
nullable columns needs no SQLite rebuild; scheduled_actions is not altered, so the publish
guard stays as it is on both dialects.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02 08:00:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None

_CHANNEL_COLUMNS = (
    ('refresh_token_sealed', sa.Text),
    ('token_expires_at', None),
    ('token_obtained_at', None),
    ('connected_account', sa.JSON),
    ('connected_at', None),
    ('reconnect_needed_since', None),
    ('reconnect_reason', sa.Text),
    ('refresh_lease_until', None),
    ('refresh_lease_token', None),
)


def _type(name, given):
    if name == 'refresh_lease_token':
        return sa.String(length=32)
    return given() if given is not None else models.core.types.UTCDateTime(timezone=True)


def upgrade():
    with op.batch_alter_table('channels', schema=None) as batch_op:
        for name, given in _CHANNEL_COLUMNS:
            batch_op.add_column(sa.Column(name, _type(name, given), nullable=True))
    op.create_table('oauth_authorizations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('state_hash', sa.String(length=64), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('channel_id', sa.Integer(), nullable=False),
    sa.Column('verifier_sealed', sa.Text(), nullable=True),
    sa.Column('redirect_uri', sa.Text(), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('used_at', models.core.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['channel_id'], ['channels.id'], name=op.f('fk_oauth_authorizations_channel_id_channels'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_oauth_authorizations_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_oauth_authorizations_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_oauth_authorizations'))
    )
    with op.batch_alter_table('oauth_authorizations', schema=None) as batch_op:
        batch_op.create_index('ix_oauth_authorizations_created_at', ['created_at'], unique=False)
        batch_op.create_index('ux_oauth_authorizations_state_hash', ['state_hash'], unique=True)


def downgrade():
    with op.batch_alter_table('oauth_authorizations', schema=None) as batch_op:
        batch_op.drop_index('ux_oauth_authorizations_state_hash')
        batch_op.drop_index('ix_oauth_authorizations_created_at')
    op.drop_table('oauth_authorizations')
    with op.batch_alter_table('channels', schema=None) as batch_op:
        for name, _ in reversed(_CHANNEL_COLUMNS):
            batch_op.drop_column(name)
