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
    # A connected account (an OAuth kind, models.channels.connections): the access token is the
    # secret above; its refresh token is sealed beside it, never shown, and both are replaced together.
    refresh_token_sealed: Mapped[str | None] = mapped_column(Text)
    token_expires_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # None: the token does not expire
    token_obtained_at: Mapped[datetime | None] = mapped_column(UTCDateTime())  # when the current token was issued
    # Who the channel posts as: {"id", "name", "username", "avatar_url"}, read once connected.
    connected_account: Mapped[dict | None] = mapped_column(JSON)
    connected_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # Set while the connection needs renewing by a person (a refresh failed, the network refused the
    # token): due rows fail as reconnect_needed instead of being sent. A successful Connect clears it.
    reconnect_needed_since: Mapped[datetime | None] = mapped_column(UTCDateTime())
    reconnect_reason: Mapped[str | None] = mapped_column(Text)
    # The refresh in progress, if any: one refresher per channel at a time (single-use refresh tokens).
    refresh_lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    refresh_lease_token: Mapped[str | None] = mapped_column(String(32))
    # Posting times in the workspace's zone: [{"days": ["mon", ...], "time": "09:00"}, ...].
    posting_slots: Mapped[list | None] = mapped_column(JSON)

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


class OAuthAuthorization(Base):
    """An authorization request in flight: sent to the network by a Connect, answered at the callback.

    Kept on the server, never in the cookie: its ``state`` is stored as a SHA-256 (the callback
    looks it up by that), the PKCE verifier sealed like a secret. Bound to the person and the
    workspace that started it, good for one answer (``used_at``) within ten minutes.
    """

    __tablename__ = "oauth_authorizations"

    id: Mapped[int] = mapped_column(primary_key=True)
    state_hash: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    verifier_sealed: Mapped[str | None] = mapped_column(Text)
    redirect_uri: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ux_oauth_authorizations_state_hash", "state_hash", unique=True),
        Index("ix_oauth_authorizations_created_at", "created_at"),
    )
