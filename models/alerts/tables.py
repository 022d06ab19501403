"""The alerts tables: alerts raised by the rules, each workspace's settings of its rules, and where its alerts go.

An alert belongs to a scope: ``instance`` (the operator's: the clock, the consumers, the disk)
or ``workspace:<id>`` (a workspace's channels, rows and wings; ``workspace_id`` is set too).
At most one alert is open (``firing`` or ``acknowledged``) per scope, rule and subject: a
partial unique index says so, so two evaluators racing to raise the same alert raise one.
"""

import enum
from datetime import datetime

from sqlalchemy import JSON, CheckConstraint, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from models.core.base import Base
from models.core.types import UTCDateTime

INSTANCE = "instance"


def workspace_scope(workspace_id: int) -> str:
    return f"workspace:{workspace_id}"


class AlertState(str, enum.Enum):
    """An alert's lifecycle (the moves are in :mod:`models.alerts.lifecycle`)."""

    FIRING = "firing"  # its rule holds; a reminder goes out after each cooldown
    ACKNOWLEDGED = "acknowledged"  # a person is on it: nothing more is sent until it resolves
    RESOLVED = "resolved"  # its rule stopped holding (terminal; a new alert is raised if it holds again)


OPEN_STATES = (AlertState.FIRING.value, AlertState.ACKNOWLEDGED.value)


class Alert(Base):
    __tablename__ = "alerts"

    id: Mapped[int] = mapped_column(primary_key=True)
    scope: Mapped[str] = mapped_column(String(40))
    workspace_id: Mapped[int | None] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    rule: Mapped[str] = mapped_column(String(32))
    # What it is about, as "<kind>:<id>" or a name (channel:12, tick, queue:default).
    subject: Mapped[str] = mapped_column(String(128))
    state: Mapped[str] = mapped_column(String(16))
    # The numbers that made it fire, as the latest pass that saw it hold read them.
    figures: Mapped[dict] = mapped_column(JSON, default=dict)
    fired_at: Mapped[datetime] = mapped_column(UTCDateTime())
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime())
    # Messages sent while firing: 0 is the first, each reminder after a cooldown adds one.
    notified_n: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    notified_at: Mapped[datetime] = mapped_column(UTCDateTime())
    acknowledged_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    acknowledged_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    silenced_until: Mapped[datetime | None] = mapped_column(UTCDateTime())
    silenced_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The send that goes around the engine (to the operator's destinations): the message
    # number it last sent, when, and the resolved message; each taken by a compare-and-set.
    direct_sent_n: Mapped[int | None] = mapped_column(Integer)
    direct_sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    direct_resolved_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    direct_error: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        CheckConstraint("state IN ('firing', 'acknowledged', 'resolved')", name="state"),
        CheckConstraint("(state = 'resolved') = (resolved_at IS NOT NULL)", name="resolved_iff_resolved_at"),
        CheckConstraint("notified_n >= 0", name="notified_n"),
        Index("ux_alerts_open_scope_rule_subject", "scope", "rule", "subject", unique=True,
              postgresql_where=text("state IN ('firing', 'acknowledged')"),
              sqlite_where=text("state IN ('firing', 'acknowledged')")),
        Index("ix_alerts_scope_id", "scope", "id"),
    )

    @property
    def is_open(self) -> bool:
        return self.state in OPEN_STATES

    def fired_key(self, n: int | None = None) -> str:
        """The ``thing_id`` of message ``n`` sent while firing (the brief's keys)."""
        return f"alert:{self.id}:fired:{self.notified_n if n is None else n}"

    @property
    def resolved_key(self) -> str:
        return f"alert:{self.id}:resolved"


class AlertRuleSetting(Base):
    """A workspace's own threshold, window and cooldown for one rule, or the rule turned off."""

    __tablename__ = "alert_rule_settings"

    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"), primary_key=True)
    rule: Mapped[str] = mapped_column(String(32), primary_key=True)
    enabled: Mapped[bool] = mapped_column(default=True)
    threshold: Mapped[float | None] = mapped_column()
    window_seconds: Mapped[int | None] = mapped_column(Integer)
    cooldown_seconds: Mapped[int | None] = mapped_column(Integer)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())


class AlertDestination(Base):
    """One of a workspace's channels chosen to carry its alerts, to one recipient (an address, a number, a URL's
    own target); ``user_id`` when the recipient is a member, whose choice of alerts then applies."""

    __tablename__ = "alert_destinations"

    id: Mapped[int] = mapped_column(primary_key=True)
    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"))
    channel_id: Mapped[int] = mapped_column(ForeignKey("channels.id", ondelete="RESTRICT"))
    recipient: Mapped[str] = mapped_column(String(255))
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (
        Index("ux_alert_destinations_ws_channel_recipient", "workspace_id", "channel_id", "recipient", unique=True),
    )


class AlertDelivery(str, enum.Enum):
    """How a member receives one rule's alerts (no row: ``immediate``)."""

    IMMEDIATE = "immediate"  # each alert as it fires, each reminder and its resolution
    DIGEST = "digest"  # only in the daily digest


class AlertPreference(Base):
    """A member's choice for one rule's alerts, sent to the destinations that name them."""

    __tablename__ = "alert_preferences"

    workspace_id: Mapped[int] = mapped_column(ForeignKey("workspaces.id", ondelete="RESTRICT"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="RESTRICT"), primary_key=True)
    rule: Mapped[str] = mapped_column(String(32), primary_key=True)
    delivery: Mapped[str] = mapped_column(String(16))
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime())

    __table_args__ = (CheckConstraint("delivery IN ('immediate', 'digest')", name="delivery"),)
