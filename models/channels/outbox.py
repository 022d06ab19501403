"""What the ``log`` provider sends: an outbox entry per delivery, shown on the dashboard."""

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime


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
    )
