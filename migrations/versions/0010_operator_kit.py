"""the operator's kit: indexes for the outbox page and the health page's trends

Only indexes; no table changes, so no SQLite rebuild and the publish guard is untouched.

- ``ix_outbox_entries_channel_created``: one channel's outbox page, newest first.

Revision ID: 0010
Revises: 0005
Create Date: 2026-11-30 23:50:00

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '0010'
down_revision = '0005'
branch_labels = None
depends_on = None

INDEXES = [
    ("ix_outbox_entries_channel_created", "outbox_entries", ["channel_id", "created_at", "id"]),
]


def upgrade():
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)


def downgrade():
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
