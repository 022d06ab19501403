"""The notifications tables: a workspace's in-app notifications, each member's reads, and where they go out.

A notification belongs to a workspace and is shown to every member under the bell; each
member reads it for themselves (``notification_reads``). When the workspace names a
channel in its notification settings, the wing that raised the notification also sends it
through the scheduled-action engine (origin ``system``, ``thing_id = notification:<id>``,
``target_key`` = the recipient): this floor cannot reach the engine, the wing does.
"""

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime


class Notification(Base):
    __tablename__ = "notifications"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    kind: Mapped[str] = mapped_column(String(32))  # work_auto_paused, work_plan_paused, ...
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    # What it is about, as "<kind>:<id>" (work:12); the floor below a wing holds no foreign key to it.
    subject: Mapped[str | None] = mapped_column(String(64))
    # Raised at most once per key in a workspace, however many times its cause is seen.
    dedupe_key: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ux_notifications_workspace_dedupe", "workspace_id", "dedupe_key", unique=True),
        Index("ix_notifications_workspace", "workspace_id", "id"),
    )

    @property
    def thing_id(self) -> str:
        """The ``thing_id`` of the action that sends it (the brief's keys for origin ``system``)."""
        return f"notification:{self.id}"


class NotificationRead(Base):
    """One member has read one notification."""

    __tablename__ = "notification_reads"

    id: Mapped[int] = mapped_column(primary_key=True)
    notification_id: Mapped[int] = mapped_column(ForeignKey("notifications.id", ondelete="RESTRICT"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    read_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index("ux_notification_reads_notification_user", "notification_id", "user_id", unique=True),)


class NotificationSettings(Base):
    """Where a workspace's notifications are also sent: one of its channels, to one recipient."""

    __tablename__ = "notification_settings"

    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"), primary_key=True)
    channel_id: Mapped[int | None] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    recipient: Mapped[str | None] = mapped_column(String(255))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
