"""Tickwork's domain: the models and the operations on them.

Importing this package registers every table on ``Base.metadata``.
"""

from models import accounts, actions, channels, outbox  # noqa: F401
from models import posts  # noqa: F401
from models.base import Base

__all__ = ["Base"]
