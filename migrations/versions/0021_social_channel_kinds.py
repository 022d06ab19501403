"""channels: the social networks' kinds

The kinds check widens to the networks Tickwork posts to. A kind is still accepted only
when a provider is registered for it (models.channels.operations); the check is the
database's own fence against a row no provider can send. channels has no triggers or
partial indexes, so the SQLite rebuild keeps everything else as it is.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02 07:30:00

"""
from alembic import op

# revision identifiers, used by Alembic.
revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None

NARROW = ('log', 'webhook', 'smtp', 'postmark', 'twilio', 'mastodon')
WIDE = NARROW + ('bluesky', 'x', 'linkedin', 'threads', 'facebook', 'instagram', 'discord', 'slack', 'telegram')


def _condition(kinds):
    return "kind IN (" + ", ".join(f"'{kind}'" for kind in kinds) + ")"


def _replace_check(kinds):
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint(op.f("ck_channels_kind"), "channels", type_="check")
        op.create_check_constraint(op.f("ck_channels_kind"), "channels", _condition(kinds))
        return
    with op.batch_alter_table("channels", recreate="always") as batch_op:
        batch_op.drop_constraint(op.f("ck_channels_kind"), type_="check")
        batch_op.create_check_constraint(op.f("ck_channels_kind"), _condition(kinds))


def upgrade():
    _replace_check(WIDE)


def downgrade():
    _replace_check(NARROW)
