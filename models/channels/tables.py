"""The channels table: a workspace's provider connections, non-secret config and a secret sealed at rest."""

import enum
import re
from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.secrets_box import SecretBox
from models.core.types import UTCDateTime


class ChannelKind(str, enum.Enum):
    """Which provider a channel speaks to."""

    LOG = "log"  # records an outbox entry; the default, needs nothing outside
    WEBHOOK = "webhook"  # signed JSON POST to a URL
    SMTP = "smtp"  # email through an SMTP server
    POSTMARK = "postmark"  # email through Postmark's HTTP API
    TWILIO = "twilio"  # SMS through Twilio's Messages API
    MASTODON = "mastodon"  # a status on a Mastodon server


CHANNEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class Channel(Base):
    __tablename__ = "channels"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    name: Mapped[str] = mapped_column(String(63))
    kind: Mapped[str] = mapped_column(String(16))
    config: Mapped[dict] = mapped_column(JSON, default=dict)
    secret_sealed: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        CheckConstraint(
            "kind IN ('log', 'webhook', 'smtp', 'postmark', 'twilio', 'mastodon', 'bluesky', 'x', 'linkedin', "
            "'threads', 'facebook', 'instagram', 'discord', 'slack', 'telegram')", name="kind"
        ),
        Index("ux_channels_workspace_name", "workspace_id", "name", unique=True),
    )

    def set_secret(self, box: SecretBox, secret: str | None) -> None:
        self.secret_sealed = box.seal(secret) if secret else None

    def secret(self, box: SecretBox) -> str | None:
        """The plaintext secret; call only at send time, and never log it."""
        return box.open(self.secret_sealed) if self.secret_sealed else None


class ChannelEvent(Base):
    """One change to a channel that matters for where its secret goes: created, its destination
    changed (kind, url, host or port; from what to what), its secret replaced or removed.

    Who and when, as every event table keeps them; ``detail`` holds destinations only, never
    a secret (see :mod:`models.channels.operations`).
    """

    __tablename__ = "channel_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    actor: Mapped[str] = mapped_column(String(255))
    actor_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    change: Mapped[str] = mapped_column(String(32))
    detail: Mapped[dict] = mapped_column(JSON, default=dict)

    __table_args__ = (
        CheckConstraint("change IN ('created', 'destination_changed', 'secret_replaced', 'secret_removed')",
                        name="change"),
        Index("ix_channel_events_channel_at", "channel_id", "at"),
    )


class ChannelThrottle(Base):
    """How fast a channel may send right now, shared by every consumer on every host.

    One row per channel that has sent under a limit or been told to wait (``models.clock.pacing``
    creates it on first use and is its only writer). The rate is kept as a schedule of slots:
    the next send may start at ``next_slot_at``; rows held back queue behind ``line_until``;
    a provider's ``Retry-After`` stops every send until ``paused_until``.
    """

    __tablename__ = "channel_throttles"

    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"), primary_key=True)
    next_slot_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # the earliest start of the next send
    line_until: Mapped[datetime | None] = mapped_column(UTCDateTime())  # the slot promised to the last row held back
    paused_until: Mapped[datetime | None] = mapped_column(UTCDateTime())  # no send before this (Retry-After)
    pause_reason: Mapped[str | None] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())
