"""What the ``log`` provider sends: an outbox entry per delivery, and the reading the dashboard shows.

Entries are read newest first, ``(created_at, id)`` descending, a page at a time, within one
workspace and optionally one channel; each page continues strictly before the last entry
the previous one showed (a keyset cursor), so a page costs the same however long the
outbox grows.
"""

from datetime import datetime, timezone

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from models.core.base import Base
from models.core.keyset import after, decode_cursor, encode_cursor
from models.core.types import UTCDateTime

MAX_ID = 2**31 - 1


class OutboxEntry(Base):
    __tablename__ = "outbox_entries"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    action_id: Mapped[int | None] = mapped_column(ForeignKey("scheduled_actions.id", ondelete="RESTRICT"))
    attempt: Mapped[int] = mapped_column(Integer, default=1)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    body: Mapped[dict] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ix_outbox_entries_workspace_created", "workspace_id", "created_at"),
        Index("ix_outbox_entries_action_id", "action_id"),
        # One channel's page, newest first, without walking the rest of the workspace's entries.
        Index("ix_outbox_entries_channel_created", "channel_id", "created_at", "id"),
    )


def outbox_entries(session: Session, workspace_id: int, *, channel_id: int | None = None,
                   before: tuple[datetime, int] | None = None, limit: int = 50) -> list[OutboxEntry]:
    """The workspace's entries (one channel's, with ``channel_id``), newest first, strictly before ``before``."""
    order = (OutboxEntry.created_at, OutboxEntry.id)
    query = select(OutboxEntry).where(OutboxEntry.workspace_id == workspace_id)
    if channel_id is not None:
        query = query.where(OutboxEntry.channel_id == channel_id)
    if before is not None:
        query = query.where(after(order, before, descending=True))
    return list(session.scalars(query.order_by(OutboxEntry.created_at.desc(), OutboxEntry.id.desc()).limit(limit)))


def entry_cursor(entry: OutboxEntry) -> str:
    """The cursor that continues a page after ``entry``."""
    return encode_cursor(entry.created_at.isoformat(), str(entry.id))


def _aware(text: str) -> datetime:
    at = datetime.fromisoformat(text)
    if at.tzinfo is None:
        raise ValueError("a cursor's instant carries its offset")
    return at.astimezone(timezone.utc)


def _entry_id(text: str) -> int:
    if not text.isdecimal() or not 0 < int(text) <= MAX_ID:
        raise ValueError("not an entry id")
    return int(text)


def read_entry_cursor(cursor: str) -> tuple[datetime, int]:
    """``(created_at, id)`` from a cursor :func:`entry_cursor` gave out; anything else is a 422."""
    return decode_cursor(cursor, _aware, _entry_id)
