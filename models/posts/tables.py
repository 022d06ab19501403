"""The posts tables, the post lifecycle's statuses, and the keys of the rows minted for a post.

A post has a body, optional media (ids of media library items, in order), a wall date and time in its workspace's zone, one
or more targets (channels of the workspace) and a status. Its moves (draft, in_review, approved, published, expired,
archived, and who may make each) are drawn and tabled in one place, ``models/posts/lifecycle.py``.

| status    | meaning                                                                     |
|-----------|-----------------------------------------------------------------------------|
| draft     | being written; the reconciler withdraws its rows (age gate permitting)       |
| in_review | submitted while review is required; waits for an admin's or reviewer's word  |
| approved  | the reconciler keeps one row per target at the post's wall time              |
| published | every target's latest row was published; set by the reconciler (terminal)    |
| expired   | its time passed while in review; a new time returns it to draft              |
| archived  | withdrawn by a person; its queued rows were cancelled at once (terminal)     |

Rows minted for a post carry ``action_type = "publish_post"``, ``thing_id = "post:<id>"``
and ``target_key = <channel name>``, so the dedupe index and the publish guard cover them.
"""

import enum
from datetime import date, datetime, time

from sqlalchemy import JSON, Boolean, CheckConstraint, Date, ForeignKey, Index, Integer, String, Text, Time, false, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.events import StatusEvent
from models.core.types import UTCDateTime

ACTION_TYPE = "publish_post"
MAX_ID = 2**31 - 1  # ids are 32-bit integers on PostgreSQL


class PostStatus(str, enum.Enum):
    """Where a post is in its life."""

    DRAFT = "draft"  # being written; no rows are kept for it
    IN_REVIEW = "in_review"  # submitted; waits for a reviewer's decision (review required)
    APPROVED = "approved"  # the reconciler keeps a row per target at its wall time
    PUBLISHED = "published"  # every target's latest row was published (terminal)
    ARCHIVED = "archived"  # withdrawn; its queued rows were cancelled (terminal)
    EXPIRED = "expired"  # its time passed while in review; a new time returns it to draft


TERMINAL_POST_STATUSES = (PostStatus.PUBLISHED.value, PostStatus.ARCHIVED.value)


class Post(Base):
    __tablename__ = "posts"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    body: Mapped[str] = mapped_column(Text)
    media: Mapped[list] = mapped_column(JSON, default=list)  # media library ids, in order
    # Per target, what replaces body and media there: {"<channel name>": {"body": ..., "media": [...]}}.
    variants: Mapped[dict | None] = mapped_column(JSON)
    # Replies after the head, in order: [{"body": ..., "media": [...]}, ...] (networks with replies).
    thread: Mapped[list | None] = mapped_column(JSON)
    # A comment under the head: {"body": ..., "media": [...]} (LinkedIn, Facebook, Instagram).
    first_comment: Mapped[dict | None] = mapped_column(JSON)
    # Its wall time is a posting slot it took from the queue ("queue" or "next").
    from_queue: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The wall date and time as the person chose them, in the workspace's zone. The instant
    # is resolved from them (and the zone as it is now) every time it is needed.
    wall_date: Mapped[date] = mapped_column(Date)
    wall_time: Mapped[time] = mapped_column(Time)
    status: Mapped[str] = mapped_column(String(16), default=PostStatus.DRAFT.value)
    # Bumped by every edit, so a screen can tell it shows an older version.
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
    submitted_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    approved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    expired_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
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
        # The expiry pass's work list: posts waiting for review.
        Index(
            "ix_posts_in_review",
            "workspace_id",
            "id",
            postgresql_where=text("status = 'in_review'"),
            sqlite_where=text("status = 'in_review'"),
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


class PostComment(Base):
    """One entry of the comment thread on a post: a comment, or the words that came with a review step."""

    __tablename__ = "post_comments"

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id", ondelete="RESTRICT"))
    author_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    author: Mapped[str] = mapped_column(String(255))  # a person's label, or "outside:<name>"
    kind: Mapped[str] = mapped_column(String(16))
    body: Mapped[str] = mapped_column(Text)
    post_revision: Mapped[int] = mapped_column(Integer)  # the version of the post it was written about
    address: Mapped[str | None] = mapped_column(String(64))  # an outside reviewer's address
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint("kind IN ('comment', 'approve', 'request_changes', 'submit')", name="kind"),
        Index("ix_post_comments_post_id", "post_id", "id"),
    )


class PostReviewLink(Base):
    """A signed link an outside reviewer opens without an account; only the token's SHA-256 is kept.

    It works until it is used for a decision, revoked, expired, or the post changes
    (``post_revision`` no longer the post's).
    """

    __tablename__ = "post_review_links"

    id: Mapped[int] = mapped_column(primary_key=True)
    post_id: Mapped[int] = mapped_column(ForeignKey("posts.id", ondelete="RESTRICT"))
    token_hash: Mapped[str] = mapped_column(String(64))
    reviewer_name: Mapped[str] = mapped_column(String(100))
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    post_revision: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    decision: Mapped[str | None] = mapped_column(String(16))
    used_from: Mapped[str | None] = mapped_column(String(64))
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint("decision IS NULL OR decision IN ('approve', 'request_changes')", name="decision"),
        Index("ux_post_review_links_token_hash", "token_hash", unique=True),
        Index("ix_post_review_links_post_id", "post_id", "id"),
    )


def thing_id_of(post_id: int) -> str:
    """The ``thing_id`` of the rows minted for post ``post_id``."""
    return f"post:{post_id}"


def post_id_of(thing_id: str | None) -> int | None:
    """The post a row's ``thing_id`` names, or None when it names none."""
    if not thing_id or not thing_id.startswith("post:"):
        return None
    rest = thing_id[5:]
    return int(rest) if rest.isdecimal() else None
