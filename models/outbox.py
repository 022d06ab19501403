"""What the ``log`` provider sends: an outbox entry per delivery, shown on the dashboard."""

from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from models.base import Base
from models.types import UTCDateTime


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


class ConsumerHeartbeat(Base):
    """The last sign of life of each consumer process, for the health page."""

    __tablename__ = "consumer_heartbeats"

    name: Mapped[str] = mapped_column(String(255), primary_key=True)  # host:pid
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    beat_at: Mapped[datetime] = mapped_column(UTCDateTime())
