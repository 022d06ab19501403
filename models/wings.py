"""The whole domain put together: every floor's tables on one metadata.

Importing this module registers every table on ``Base.metadata``, which the migrations and
the schema test compare against; the app factory imports it before anything else.
"""

from models.accounts import tables as accounts_tables  # noqa: F401
from models.actions import tables as actions_tables  # noqa: F401
from models.channels import outbox, tables as channels_tables  # noqa: F401
from models.clock import tables as clock_tables  # noqa: F401
from models.core.base import Base
from models.posts import tables as posts_tables  # noqa: F401

__all__ = ["Base"]
