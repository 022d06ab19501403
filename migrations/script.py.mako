"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
Create Date: ${create_date}

"""
import sqlalchemy as sa
from alembic import op

import models.core.types

# Revisions are frozen: import column types from models, never DDL. A revision that alters
# scheduled_actions on SQLite copies the table and drops its triggers: it carries its own
# copy of the publish guard's SQL (see 0005) and re-installs it in the same revision.
${imports if imports else ""}

# revision identifiers, used by Alembic.
revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = ${repr(branch_labels)}
depends_on = ${repr(depends_on)}


def upgrade():
    ${upgrades if upgrades else "pass"}


def downgrade():
    ${downgrades if downgrades else "pass"}
