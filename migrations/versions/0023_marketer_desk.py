"""the marketer's desk: variants, threads and first comments, posting slots, review and outside approvers

- posts: per-network variants, a thread and a first comment (JSON, null when absent), whether the
  post took its time from the queue, when it was submitted for review and when it expired; the
  status check widens to ``in_review`` and ``expired``, and in-review posts get their own partial
  index (the expiry pass reads only those).
- channels: posting slots (JSON, wall times in the workspace's zone).
- workspaces: the ``review`` setting (off | required) and ``outside_approval``.
- memberships and invitations: the ``reviewer`` role.
- post_comments: the comment thread on a post, kept with its history.
- post_review_links: signed links for outside reviewers (only the token's SHA-256 is stored).

SQLite rebuilds posts and memberships to change their checks; posts' partial indexes are dropped
before and created after the rebuild, so their WHERE clauses survive. scheduled_actions is not
altered, so the publish guard stays as it is on both dialects.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02 12:30:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None

NARROW_STATUSES = ('draft', 'approved', 'published', 'archived')
WIDE_STATUSES = ('draft', 'in_review', 'approved', 'published', 'archived', 'expired')
NARROW_ROLES = ('admin', 'ops', 'marketer')
WIDE_ROLES = ('admin', 'ops', 'marketer', 'reviewer')

_POST_COLUMNS = (
    ('variants', sa.JSON),
    ('thread', sa.JSON),
    ('first_comment', sa.JSON),
    ('from_queue', None),
    ('submitted_at', None),
    ('expired_at', None),
)


def _utc():
    return models.core.types.UTCDateTime(timezone=True)


def _in(column, values):
    return f"{column} IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def _partial(name, status):
    where = sa.text(f"status = '{status}'")
    op.create_index(name, 'posts', ['workspace_id', 'id'], unique=False, postgresql_where=where,
                    sqlite_where=where)


def _replace_check(table, name, condition):
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint(op.f(f"ck_{table}_{name}"), table, type_="check")
        op.create_check_constraint(op.f(f"ck_{table}_{name}"), table, condition)
        return
    with op.batch_alter_table(table, recreate="always") as batch_op:
        batch_op.drop_constraint(op.f(f"ck_{table}_{name}"), type_="check")
        batch_op.create_check_constraint(op.f(f"ck_{table}_{name}"), condition)


def upgrade():
    op.drop_index('ix_posts_approved', table_name='posts')
    with op.batch_alter_table('posts', schema=None) as batch_op:
        for name, given in _POST_COLUMNS:
            if name == 'from_queue':
                batch_op.add_column(sa.Column(name, sa.Boolean(), server_default=sa.false(), nullable=False))
            else:
                batch_op.add_column(sa.Column(name, given() if given else _utc(), nullable=True))
    _replace_check('posts', 'status', _in('status', WIDE_STATUSES))
    _partial('ix_posts_approved', 'approved')
    _partial('ix_posts_in_review', 'in_review')

    with op.batch_alter_table('channels', schema=None) as batch_op:
        batch_op.add_column(sa.Column('posting_slots', sa.JSON(), nullable=True))
    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.add_column(sa.Column('review', sa.String(length=16), server_default='off', nullable=False))
        batch_op.add_column(sa.Column('outside_approval', sa.Boolean(), server_default=sa.false(), nullable=False))
    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.create_check_constraint(op.f('ck_workspaces_review'), "review IN ('off', 'required')")
    _replace_check('memberships', 'role', _in('role', WIDE_ROLES))

    op.create_table('post_comments',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('post_id', sa.Integer(), nullable=False),
    sa.Column('author_user_id', sa.Integer(), nullable=True),
    sa.Column('author', sa.String(length=255), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('body', sa.Text(), nullable=False),
    sa.Column('post_revision', sa.Integer(), nullable=False),
    sa.Column('address', sa.String(length=64), nullable=True),
    sa.Column('created_at', _utc(), nullable=False),
    sa.CheckConstraint("kind IN ('comment', 'approve', 'request_changes', 'submit')", name=op.f('ck_post_comments_kind')),
    sa.ForeignKeyConstraint(['author_user_id'], ['users.id'], name=op.f('fk_post_comments_author_user_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_post_comments_post_id_posts'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_post_comments'))
    )
    with op.batch_alter_table('post_comments', schema=None) as batch_op:
        batch_op.create_index('ix_post_comments_post_id', ['post_id', 'id'], unique=False)

    op.create_table('post_review_links',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('post_id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('reviewer_name', sa.String(length=100), nullable=False),
    sa.Column('created_by_id', sa.Integer(), nullable=True),
    sa.Column('post_revision', sa.Integer(), nullable=False),
    sa.Column('created_at', _utc(), nullable=False),
    sa.Column('expires_at', _utc(), nullable=False),
    sa.Column('used_at', _utc(), nullable=True),
    sa.Column('decision', sa.String(length=16), nullable=True),
    sa.Column('used_from', sa.String(length=64), nullable=True),
    sa.Column('revoked_at', _utc(), nullable=True),
    sa.CheckConstraint("decision IS NULL OR decision IN ('approve', 'request_changes')", name=op.f('ck_post_review_links_decision')),
    sa.ForeignKeyConstraint(['created_by_id'], ['users.id'], name=op.f('fk_post_review_links_created_by_id_users'), ondelete='RESTRICT'),
    sa.ForeignKeyConstraint(['post_id'], ['posts.id'], name=op.f('fk_post_review_links_post_id_posts'), ondelete='RESTRICT'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_post_review_links'))
    )
    with op.batch_alter_table('post_review_links', schema=None) as batch_op:
        batch_op.create_index('ux_post_review_links_token_hash', ['token_hash'], unique=True)
        batch_op.create_index('ix_post_review_links_post_id', ['post_id', 'id'], unique=False)


def downgrade():
    op.drop_table('post_review_links')
    op.drop_table('post_comments')
    op.execute("UPDATE memberships SET role = 'marketer' WHERE role = 'reviewer'")
    _replace_check('memberships', 'role', _in('role', NARROW_ROLES))
    with op.batch_alter_table('workspaces', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_workspaces_review'), type_='check')
        batch_op.drop_column('outside_approval')
        batch_op.drop_column('review')
    with op.batch_alter_table('channels', schema=None) as batch_op:
        batch_op.drop_column('posting_slots')
    op.drop_index('ix_posts_in_review', table_name='posts')
    op.drop_index('ix_posts_approved', table_name='posts')
    op.execute("UPDATE posts SET status = 'draft' WHERE status IN ('in_review', 'expired')")
    _replace_check('posts', 'status', _in('status', NARROW_STATUSES))
    with op.batch_alter_table('posts', schema=None) as batch_op:
        for name, _ in reversed(_POST_COLUMNS):
            batch_op.drop_column(name)
    _partial('ix_posts_approved', 'approved')
