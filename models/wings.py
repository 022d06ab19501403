"""The whole domain put together: every floor's tables on one metadata, every wing's hooks in one registry.

Importing this module registers every table on ``Base.metadata``, which the migrations and
the schema test compare against; the app factory imports it before anything else and
builds its hooks with :func:`install_hooks`. A new wing adds its tables module and its
``register`` here, and nowhere below.
"""

from models.accounts import idempotency, tables as accounts_tables  # noqa: F401
from models.actions import archived_keys, tables as actions_tables  # noqa: F401
from models.alerts import tables as alerts_tables  # noqa: F401
from models.channels import outbox, tables as channels_tables  # noqa: F401
from models.clock import tables as clock_tables  # noqa: F401
from models.core.base import Base
from models.core.hooks import Hooks
from models.drips import hooks as drips_hooks, tables as drips_tables  # noqa: F401
from models.imports import tables as imports_tables  # noqa: F401
from models.media import tables as media_tables  # noqa: F401
from models.notifications import tables as notifications_tables  # noqa: F401
from models.posts import hooks as posts_hooks, tables as posts_tables  # noqa: F401
from models.retention import tables as retention_tables  # noqa: F401
from models.recurring import hooks as recurring_hooks, tables as recurring_tables  # noqa: F401
from models.works import hooks as works_hooks, tables as works_tables  # noqa: F401

WINGS = (posts_hooks, recurring_hooks, works_hooks, drips_hooks)

__all__ = ["Base", "WINGS", "install_hooks"]


def install_hooks(policy=None) -> Hooks:
    """A registry with every wing's parts on it; ``policy`` is the app's, for the checks that need it."""
    hooks = Hooks(policy=policy)
    for wing in WINGS:
        wing.register(hooks)
    return hooks
