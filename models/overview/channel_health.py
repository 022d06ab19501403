"""A channel's health, as its page shows it: who it posts as, its token, its last success, its recent failures,
and the rate it is held to."""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ScheduledAction, Status
from models.channels.connections import ConnectionState, connection_state, oauth_kinds
from models.channels.limits import limits_for
from models.channels.tables import Channel, ChannelThrottle

FAILURE_WINDOW = timedelta(hours=24)
TOP_REASONS = 5
# Failures read at most for one page (the count says "at least" beyond it).
FAILURES_READ = 1000


@dataclass
class ChannelHealth:
    state: ConnectionState
    account: dict | None
    token_expires_at: datetime | None
    last_success_at: datetime | None
    last_success_id: int | None
    failures: int
    failures_capped: bool
    reasons: list[tuple[str, int]] = field(default_factory=list)
    rate: str = ""
    paused_until: datetime | None = None
    pause_reason: str | None = None


def _reason(code: str | None, error: str | None) -> str:
    words = (error or "").strip().split("\n", 1)[0][:160]
    return f"{code}: {words}" if code and words else (code or words or "unknown")


def channel_health(session: Session, channel: Channel, *, now: datetime) -> ChannelHealth:
    """The figures of one channel's health section."""
    last = session.execute(
        select(ScheduledAction.id, ScheduledAction.finished_at)
        .where(ScheduledAction.workspace_id == channel.workspace_id, ScheduledAction.channel_id == channel.id,
               ScheduledAction.status == Status.PUBLISHED.value)
        .order_by(ScheduledAction.publish_at.desc(), ScheduledAction.id.desc()).limit(1)).first()
    failed = session.execute(
        select(ScheduledAction.failure_code, ScheduledAction.last_error, ActionEvent.reason)
        .join(ScheduledAction, ScheduledAction.id == ActionEvent.action_id)
        .where(ActionEvent.to_status == Status.FAILED.value, ActionEvent.at >= now - FAILURE_WINDOW,
               ScheduledAction.channel_id == channel.id)
        .limit(FAILURES_READ)).all()
    reasons = Counter(_reason(code, event_reason or error) for code, error, event_reason in failed)
    limits = limits_for(channel.kind, channel.config or {})
    throttle = session.get(ChannelThrottle, channel.id)
    paused = throttle.paused_until if throttle and throttle.paused_until and throttle.paused_until > now else None
    return ChannelHealth(
        state=connection_state(channel, now), account=channel.connected_account,
        token_expires_at=channel.token_expires_at,
        last_success_at=last.finished_at if last else None, last_success_id=last.id if last else None,
        failures=len(failed), failures_capped=len(failed) >= FAILURES_READ,
        reasons=reasons.most_common(TOP_REASONS),
        rate=limits.describe() if limits.limited else "no limit",
        paused_until=paused, pause_reason=throttle.pause_reason if paused else None,
    )


def channels_needing_reconnect(session: Session, workspace_id: int, now: datetime) -> list[tuple[Channel, ConnectionState]]:
    """The workspace's channels whose connected account needs a person: in reconnect needed, or expiring without refresh."""
    channels = session.scalars(select(Channel).where(
        Channel.workspace_id == workspace_id,
        Channel.kind.in_(oauth_kinds()) | Channel.reconnect_needed_since.is_not(None)).order_by(Channel.name))
    found = [(channel, connection_state(channel, now)) for channel in channels]
    return [(channel, state) for channel, state in found if state.needs_a_person]
