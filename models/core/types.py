"""Column types shared by every model."""

from datetime import datetime, timezone

from sqlalchemy import DateTime
from sqlalchemy.types import TypeDecorator


class NaiveDatetimeError(ValueError):
    """A naive datetime reached the database layer; its zone is unknowable."""


class UTCDateTime(TypeDecorator):
    """An instant, stored as UTC on both dialects.

    PostgreSQL keeps it in a ``timestamptz``. SQLite has no such type, so the value is
    converted to UTC and stored without an offset; every value read back is aware UTC.
    A naive datetime is refused on the way in: its meaning depends on whoever wrote it.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}")
        if value.tzinfo is None or value.utcoffset() is None:
            raise NaiveDatetimeError(f"refusing naive datetime {value.isoformat()}: give it a zone")
        value = value.astimezone(timezone.utc)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)
