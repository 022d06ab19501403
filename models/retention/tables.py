"""Retention's own tables: which archive file holds a pruned action, and the lease one host archives under."""

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime


class ArchivedAction(Base):
    """An action pruned from the live database, and the archive file (under the archive directory) that holds it."""

    __tablename__ = "archived_actions"

    # No foreign key: the row it names is gone from scheduled_actions, on purpose.
    action_id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    file: Mapped[str] = mapped_column(String(255))  # a file name, relative to TICKWORK_ARCHIVE_DIR
    archived_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (Index("ix_archived_actions_workspace", "workspace_id", "action_id"),)


class RetentionLease(Base):
    """Who archives now: one row per lease name; a host takes it when it is free or expired."""

    __tablename__ = "retention_leases"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    holder: Mapped[str] = mapped_column(String(255))  # host:pid:nonce of the pass that holds it
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
