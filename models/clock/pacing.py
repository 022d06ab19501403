"""Keeping each channel within its limits, across every consumer on every host: admit a row, or hold it.

The limits (``models.channels.limits``) are counted in the database, in the claim's own write
transaction, so they hold however many consumers run wherever; no Redis is needed, and a
consumer that dies leaves nothing to clean up. Per channel, one ``channel_throttles`` row,
locked for the few statements of an admission (``SELECT ... FOR UPDATE`` on PostgreSQL; on
SQLite the transaction's ``BEGIN IMMEDIATE`` already admits one writer at a time):

| limit | counted as | a row that finds no room |
|---|---|---|
| rate N per second / minute | a schedule of slots evenly spaced (the window plus a 100 ms guard, over N): the next send may start at ``next_slot_at``, and takes the slot | held until its place in the channel's line (``line_until`` + interval); a slot less than a second away is waited for in the sending thread instead |
| concurrency C | the channel's rows in ``submitted`` (in flight, or in doubt after a crash until recovery) | held for a second (``RECHECK``) |
| ``Retry-After`` (429 / 503) | ``paused_until``, set by any row that got one | held until the pause ends, in line |

A held row stays ``queued`` (``lifecycle.hold``): no attempt is counted, and the wait is not
lateness. Rows held for the rate queue in the order they were held; while that line is
long, a row that was not in it joins its end rather than taking a slot from it.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, delete, exists, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from models.actions import lifecycle
from models.actions.tables import ActionHold, ScheduledAction, Status
from models.channels.limits import ChannelLimits, limits_for
from models.channels.tables import Channel, ChannelThrottle
from models.core.moves import Actor, Outcome
from models.timing.clock import Clock

# Slots are spaced this much wider per window than the rate alone says. A slot is when a
# send may start; the commit, the wake-up and the request reach the provider a little after
# it, by an amount that varies (tens of milliseconds on a busy box), so N slots in exactly
# one window could arrive as N + 1 in one. Any send that reaches the provider within this
# guard of its slot keeps every window at N.
RATE_GUARD = timedelta(milliseconds=100)
# A slot at most this far ahead is waited for by the sending thread (a 1/s channel's next
# slot is within it); a later one means a hold.
SLOT_HORIZON = timedelta(seconds=1) + RATE_GUARD
# A claimed row that reaches its send more than this after its slot takes a fresh one
# (``retake``): half the guard, leaving the other half for the request's own way there.
LATE_START = RATE_GUARD / 2
# A row that found its channel's concurrency cap full tries again after this.
RECHECK = timedelta(seconds=1)

_throttles = ChannelThrottle.__table__


@dataclass(frozen=True)
class Admission:
    """What a channel's limits say about one row: send at ``slot``, or hold it until ``hold_until``."""

    slot: datetime | None = None
    hold_until: datetime | None = None
    cause: str | None = None  # rate, concurrency or paused, for a hold
    message: str = ""

    @property
    def held(self) -> bool:
        return self.hold_until is not None


def spacing(rate) -> timedelta:
    """The time between two slots of ``rate``: its window, widened by :data:`RATE_GUARD`, over its count."""
    return (rate.per + RATE_GUARD) / rate.count


def needs_admission(limits: ChannelLimits, paused_until: datetime | None, now: datetime) -> bool:
    """Whether a row of this channel must pass :func:`admit` (a limit, or a pause the look saw)."""
    return limits.limited or (paused_until is not None and paused_until > now)


def _ensure_row(session: Session, channel_id: int, now: datetime) -> None:
    dialect = session.connection().dialect.name
    module = postgresql if dialect == "postgresql" else sqlite
    session.execute(module.insert(_throttles).values(channel_id=channel_id, updated_at=now)
                    .on_conflict_do_nothing(index_elements=["channel_id"]))


def _locked(session: Session, channel_id: int, now: datetime):
    """The channel's throttle row, created if missing and locked until the transaction ends."""
    _ensure_row(session, channel_id, now)
    return session.execute(select(_throttles).where(_throttles.c.channel_id == channel_id).with_for_update()).one()


def _in_flight(session: Session, channel_id: int) -> int:
    return session.scalar(select(func.count()).select_from(ScheduledAction).where(
        ScheduledAction.status == Status.SUBMITTED.value, ScheduledAction.channel_id == channel_id))


def _whole_second_after(at: datetime) -> datetime:
    """``at`` rounded up to a whole second: rows held to one second share one queue task."""
    rounded = at.replace(microsecond=0)
    return rounded if rounded == at else rounded + timedelta(seconds=1)


def admit(session: Session, channel: Channel, limits: ChannelLimits, clock: Clock, *, in_line: bool) -> Admission:
    """In the claim's write transaction: may a row of ``channel`` go now (and at which slot), or must it wait?

    ``in_line`` says the row was held before and its turn has come: it may take a slot
    although others still wait behind it. A slot taken here is the row's, whatever comes of
    its claim: an unused slot only slows the channel a little, never speeds it up. The
    time is read once the channel's row is locked, however long the lock took.
    """
    throttle = _locked(session, channel.id, clock.now())
    now = clock.now()
    resume = max(now, throttle.paused_until or now)
    paused = resume > now
    interval = spacing(limits.rate) if limits.rate else None
    values: dict = {}
    admission: Admission
    if interval is None:
        admission = Admission(hold_until=resume, cause="paused", message=_paused(throttle, resume)) if paused \
            else Admission(slot=now)
    else:
        base = max(resume, throttle.next_slot_at or resume)
        line = throttle.line_until
        queue_behind = not in_line and line is not None and line > now
        if queue_behind or base > now + SLOT_HORIZON:
            place = max(base, (line + interval) if line is not None and line > now else base)
            values["line_until"] = place
            cause = "paused" if paused and place <= resume + interval else "rate"
            words = _paused(throttle, resume) if cause == "paused" else f"limited to {limits.rate}"
            admission = Admission(hold_until=_whole_second_after(place), cause=cause,
                                  message=f"held: channel {channel.name} {words}; its turn comes at {place:%H:%M:%S}Z")
        else:
            admission = Admission(slot=base)
    if admission.slot is not None and limits.concurrency is not None:
        if _in_flight(session, channel.id) >= limits.concurrency:
            admission = Admission(hold_until=_whole_second_after(now + RECHECK), cause="concurrency",
                                  message=f"held: channel {channel.name} already has {limits.concurrency} "
                                          f"send(s) in flight, its limit")
    if admission.slot is not None and interval is not None:
        values["next_slot_at"] = admission.slot + interval
    if values:
        session.execute(update(_throttles).where(_throttles.c.channel_id == channel.id).values(**values,
                                                                                                updated_at=now))
    return admission


def retake(session: Session, channel_id: int, limits: ChannelLimits, clock: Clock) -> datetime:
    """A fresh slot for a claimed row whose own slot went by while its claim committed.

    A send that starts well after its slot can land beside the next slot's send, and a few
    such late ones in a row would put more than N sends in one window at the provider. So a
    row that reaches its send later than :data:`LATE_START` past its slot gives it up (an
    unused slot only slows the channel) and takes the channel's next one, as if admitted now;
    a pause its provider set meanwhile is respected too.
    """
    throttle = _locked(session, channel_id, clock.now())
    now = clock.now()
    slot = max(now, throttle.paused_until or now, throttle.next_slot_at or now)
    session.execute(update(_throttles).where(_throttles.c.channel_id == channel_id).values(
        next_slot_at=slot + spacing(limits.rate), updated_at=now))
    return slot


def _paused(throttle, resume: datetime) -> str:
    why = f" ({throttle.pause_reason})" if throttle.pause_reason else ""
    return f"paused until {resume:%H:%M:%S}Z by its provider{why}"


def hold(session: Session, row: ScheduledAction, channel: Channel, admission: Admission, *, late_from: datetime,
         now: datetime, actor: Actor) -> Outcome:
    """Hold ``row`` as ``admission`` says; its lateness so far (measured from ``late_from``) is carried over."""
    carried = max(now - late_from, timedelta(0))
    return lifecycle.hold(session, row.id, channel_id=channel.id, until=admission.hold_until,
                          late_from=admission.hold_until - carried, cause=admission.cause,
                          message=f"{admission.message}; not an attempt", now=now, actor=actor)


def pause(session: Session, channel_id: int, *, until: datetime, reason: str, now: datetime) -> None:
    """Stop every send of the channel until ``until`` (a provider's Retry-After); a longer pause stands."""
    throttle = _locked(session, channel_id, now)
    if throttle.paused_until is not None and throttle.paused_until >= until:
        return
    session.execute(update(_throttles).where(_throttles.c.channel_id == channel_id).values(
        paused_until=until, pause_reason=reason[:300], updated_at=now))


_CURRENT_HOLD = and_(ActionHold.action_id == ScheduledAction.id, ActionHold.held_until == ScheduledAction.next_attempt_at,
                     ScheduledAction.status == Status.QUEUED.value)


def current_hold_join():
    """The join condition of a row and its hold while the hold is current (see ``ActionHold``)."""
    return and_(ActionHold.action_id == ScheduledAction.id, ActionHold.held_until == ScheduledAction.next_attempt_at)


def forget_stale_holds(session: Session) -> int:
    """Delete the holds of rows that moved on (claimed, retried, backed off, cancelled); returns how many."""
    stale = ~exists().where(_CURRENT_HOLD)
    return session.execute(delete(ActionHold).where(stale)).rowcount


@dataclass(frozen=True)
class ThrottledChannel:
    """A channel held back right now, for the queue page."""

    channel_id: int
    name: str
    limits: str
    paused_until: datetime | None
    pause_reason: str | None
    held: int  # queued rows waiting on it
    clear_at: datetime | None  # when the last of them is due to go
    oldest_due: datetime | None  # the publish_at of the longest-waiting one

    def behind(self, now: datetime) -> timedelta | None:
        """How long until the channel has caught up with what is waiting on it."""
        return max(self.clear_at - now, timedelta(0)) if self.clear_at else None

    def behind_words(self, now: datetime) -> str:
        seconds = int(self.behind(now).total_seconds()) if self.clear_at else 0
        hours, rest = divmod(seconds, 3600)
        return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def throttled_channels(session: Session, workspace_id: int, now: datetime) -> list[ThrottledChannel]:
    """The workspace's channels that are paused or hold rows back now, by name."""
    held = (select(ActionHold.channel_id, func.count().label("held"), func.max(ActionHold.held_until).label("clear_at"),
                   func.min(ScheduledAction.publish_at).label("oldest_due"))
            .join(ScheduledAction, _CURRENT_HOLD)
            .where(ScheduledAction.workspace_id == workspace_id)
            .group_by(ActionHold.channel_id)).subquery()
    rows = session.execute(
        select(Channel, ChannelThrottle.paused_until, ChannelThrottle.pause_reason, held.c.held, held.c.clear_at,
               held.c.oldest_due)
        .outerjoin(ChannelThrottle, ChannelThrottle.channel_id == Channel.id)
        .outerjoin(held, held.c.channel_id == Channel.id)
        .where(Channel.workspace_id == workspace_id)
        .order_by(Channel.name)).all()
    out = []
    for channel, paused_until, reason, count, clear_at, oldest_due in rows:
        paused = paused_until if paused_until is not None and paused_until > now else None
        if not paused and not count:
            continue
        out.append(ThrottledChannel(channel.id, channel.name, limits_for(channel.kind, channel.config).describe(),
                                    paused, reason if paused else None, count or 0, clear_at, oldest_due))
    return out


