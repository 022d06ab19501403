"""work schedules: the overlap policy (skip, or buffer_one) a slot follows when the last generation still runs

One column with its CHECK, added in place on both dialects: work_schedules is not rebuilt,
and scheduled_actions (the publish guard's table) is not touched.

Revision ID: 0016
Revises: 0014
Create Date: 2026-12-02 01:20:00

"""
import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = '0016'
down_revision = '0014'
branch_labels = None
depends_on = None

CHECK = "overlap_policy IN ('skip', 'buffer_one')"


def upgrade():
    if op.get_bind().dialect.name == "sqlite":
        # SQLite adds a column with its own CHECK in place; a batch rebuild would drop the partial due index.
        op.execute("ALTER TABLE work_schedules ADD COLUMN overlap_policy VARCHAR(16) DEFAULT 'skip' NOT NULL "
                   f"CONSTRAINT ck_work_schedules_overlap_policy CHECK ({CHECK})")
        return
    op.add_column('work_schedules', sa.Column('overlap_policy', sa.String(length=16), server_default='skip',
                                              nullable=False))
    op.create_check_constraint('ck_work_schedules_overlap_policy', 'work_schedules', CHECK)


def downgrade():
    if op.get_bind().dialect.name == "sqlite":
        op.execute("ALTER TABLE work_schedules DROP COLUMN overlap_policy")
        return
    op.drop_constraint('ck_work_schedules_overlap_policy', 'work_schedules', type_='check')
    op.drop_column('work_schedules', 'overlap_policy')
