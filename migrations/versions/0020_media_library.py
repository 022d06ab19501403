"""media library: checked, content-addressed files; posts name media by id

One new table. Posts' ``media`` was a list of links no provider sent; it becomes a list of
media ids. The links a post had are kept as plain links appended to its text, so nothing
written is lost, and no network call is made here (a link is fetched into the library only
when a person saves a post with it). scheduled_actions is not altered, so its triggers (the
publish guard) stay as they are on both dialects.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02 01:30:00

"""
import json

import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table('media',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('workspace_id', sa.Integer(), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('kind', sa.String(length=8), nullable=False),
    sa.Column('mime', sa.String(length=64), nullable=False),
    sa.Column('bytes', sa.BigInteger(), nullable=False),
    sa.Column('width', sa.Integer(), nullable=True),
    sa.Column('height', sa.Integer(), nullable=True),
    sa.Column('duration', sa.Float(), nullable=True),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('alt', sa.Text(), nullable=False),
    sa.Column('name', sa.String(length=255), nullable=False),
    sa.Column('created_at', models.core.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint("kind IN ('image', 'gif', 'video')", name=op.f('ck_media_kind')),
    sa.CheckConstraint('bytes >= 0', name=op.f('ck_media_bytes')),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_media_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['workspace_id'], ['workspaces.id'], name=op.f('fk_media_workspace_id_workspaces'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_media'))
    )
    with op.batch_alter_table('media', schema=None) as batch_op:
        batch_op.create_index('ix_media_sha256', ['sha256'], unique=False)
        batch_op.create_index('ix_media_workspace_id', ['workspace_id', 'id'], unique=False)
    _links_into_text()


_posts = sa.table('posts', sa.column('id', sa.Integer()), sa.column('body', sa.Text()), sa.column('media', sa.JSON()))


def _links_into_text():
    """Each post's media links, appended to its body one per line; its media list emptied."""
    connection = op.get_bind()
    for post_id, body, media in connection.execute(sa.select(_posts.c.id, _posts.c.body, _posts.c.media)).all():
        if isinstance(media, str):
            media = json.loads(media)
        if not media:
            continue
        links = [str(link) for link in media if isinstance(link, str)]
        new_body = body.rstrip() + "\n\n" + "\n".join(links) if links else body
        connection.execute(sa.update(_posts).where(_posts.c.id == post_id).values(body=new_body, media=[]))


def downgrade():
    # Media ids mean nothing without the library: posts go back to naming no media.
    op.get_bind().execute(sa.update(_posts).values(media=[]))
    with op.batch_alter_table('media', schema=None) as batch_op:
        batch_op.drop_index('ix_media_workspace_id')
        batch_op.drop_index('ix_media_sha256')
    op.drop_table('media')
