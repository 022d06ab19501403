"""The posts tables, the post lifecycle's statuses, and the keys of the rows minted for a post.

A post has a body, optional media (ids of media library items, in order), a wall date and time in its workspace's zone, one
or more targets (channels of the workspace) and a status::

    draft ──approve──▶ approved ──(every target's latest row published)──▶ published
      ▲                  │
      └────unapprove─────┘
    draft / approved / published ──archive──▶ archived

| status    | meaning                                                                     |
|-----------|-----------------------------------------------------------------------------|
| draft     | being written; the reconciler withdraws its rows (age gate permitting)       |
| approved  | the reconciler keeps one row per target at the post's wall time              |
| published | every target's latest row was published; set by the reconciler (terminal)    |
| archived  | withdrawn by a person; its queued rows were cancelled at once (terminal)     |

Rows minted for a post carry ``action_type = "publish_post"``, ``thing_id = "post:<id>"``
and ``target_key = <channel name>``, so the dedupe index and the publish guard cover them.
"""

import enum
from datetime import date, datetime, time

from sqlalchemy import JSON, CheckConstraint, Date, ForeignKey, Index, Integer, String, Text, Time, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.events import StatusEvent
from models.core.types import UTCDateTime

ACTION_TYPE = "publish_post"
MAX_ID = 2**31 - 1  # ids are 32-bit integers on PostgreSQL


class PostStatus(str, enum.Enum):
    """Where a post is in its life."""

    DRAFT = "draft"  # being written; no rows are kept for it
    APPROVED = "approved"  # the reconciler keeps a row per target at its wall time
    PUBLISHED = "published"  # every target's latest row was published (terminal)
    ARCHIVED = "archived"  # withdrawn; its queued rows were cancelled (terminal)


TERMINAL_POST_STATUSES = (PostStatus.PUBLISHED.value, PostStatus.ARCHIVED.value)


class Post(Base):
    __tablename__ = "posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    body: Mapped[str] = mapped_column(Text)
    media: Mapped[list] = mapped_column(JSON, default=list)  # media library ids, in order
    # The wall date and time as the person chose them, in the workspace's zone. The instant
    # is resolved from them (and the zone as it is now) every time it is needed.
    wall_date: Mapped[date] = mapped_column(Date)
    wall_time: Mapped[time] = mapped_column(Time)
    status: Mapped[str] = mapped_column(String(16), default=PostStatus.DRAFT.value)
    # Bumped by every edit, so a screen can tell it shows an older version.
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    published_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    archived_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(
            "status IN (" + ", ".join(repr(s.value) for s in PostStatus) + ")", name="status"
        ),
        # The calendar: a workspace's posts by wall date and time.
        Index("ix_posts_workspace_wall", "workspace_id", "wall_date", "wall_time", "id"),
        # The reconciler's work list: approved posts only, however many others there are.
        Index(
            "ix_posts_approved",
            "workspace_id",
            "id",
            postgresql_where=text("status = 'approved'"),
            sqlite_where=text("status = 'approved'"),
        ),
    )

    @property
    def thing_id(self) -> str:
        return thing_id_of(self.id)


class PostTarget(Base):
    """One channel a post goes to."""

    __tablename__ = "post_targets"

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id", ondelete="RESTRICT"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))

    __table_args__ = (Index("ux_post_targets_post_channel", "post_id", "channel_id", unique=True),)


class PostEvent(StatusEvent, Base):
    """One status change of one post: from, to, when, who or which clock run, and why."""

    __tablename__ = "post_events"

    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id", ondelete="RESTRICT"))

    __table_args__ = (Index("ix_post_events_post_id", "post_id", "id"),)


def thing_id_of(post_id: int) -> str:
    """The ``thing_id`` of the rows minted for post ``post_id``."""
    return f"post:{post_id}"


def post_id_of(thing_id: str | None) -> int | None:
    """The post a row's ``thing_id`` names, or None when it names none."""
    if not thing_id or not thing_id.startswith("post:"):
        return None
    rest = thing_id[5:]
    return int(rest) if rest.isdecimal() else None
