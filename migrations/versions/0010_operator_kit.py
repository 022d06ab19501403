"""the operator's kit: indexes for the outbox page and the health page's trends

Indexes and one nullable column added in place (SQLite's ADD COLUMN needs no rebuild), so
scheduled_actions and its publish guard are untouched.

- ``ix_outbox_entries_channel_created``: one channel's outbox page, newest first.
- ``ix_clock_runs_started`` and ``ix_action_events_at``: the tick's per-minute rollup reads
  one minute of clock runs (every kind) and of action events.
- ``clock_runs.rollup_hour`` and its partial index: the tick runs whose summary carries
  hour rollups, so a week of charts reads 168 hours rather than 10,080 minutes.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30 23:50:00

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# revision identifiers, used by Alembic.
revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

INDEXES = [
    ("ix_outbox_entries_channel_created", "outbox_entries", ["channel_id", "created_at", "id"]),
    ("ix_clock_runs_started", "clock_runs", ["started_at"]),
    ("ix_action_events_at", "action_events", ["at"]),
]


def upgrade():
    for name, table, columns in INDEXES:
        op.create_index(name, table, columns, unique=False)
    op.add_column('clock_runs', sa.Column('rollup_hour', models.core.types.UTCDateTime(timezone=True), nullable=True))
    op.create_index('ix_clock_runs_rollup_hour', 'clock_runs', ['rollup_hour'], unique=False,
                    postgresql_where=sa.text('rollup_hour IS NOT NULL'), sqlite_where=sa.text('rollup_hour IS NOT NULL'))


def downgrade():
    op.drop_index('ix_clock_runs_rollup_hour', table_name='clock_runs')
    with op.batch_alter_table('clock_runs', schema=None) as batch_op:
        batch_op.drop_column('rollup_hour')
    for name, table, _ in reversed(INDEXES):
        op.drop_index(name, table_name=table)
