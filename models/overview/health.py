"""How the clock is doing: last run of each job, backlog, lateness, consumer heartbeats.

Read-only queries for the health page, ``/healthz`` and ``/metrics``. The clock is one
per installation, so these span every workspace and return numbers, never content.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ScheduledAction, queued_and_due_by
from models.clock.tables import ClockRun
from models.core.hooks import Gauge
from models.clock.heartbeats import HEARTBEAT_INTERVAL
from models.clock.tables import ConsumerHeartbeat
from models.clock.tick import TICK as TICK_KIND
from models.core.types import UTCDateTime

# Three missed ticks is an outage, not jitter: three minutes at the default interval.
TICKS_MISSED_BEFORE_STALE = 3
# A consumer beats every HEARTBEAT_INTERVAL; three missed beats and it counts as gone.
HEARTBEAT_STALE_AFTER = 3 * HEARTBEAT_INTERVAL


@dataclass(frozen=True)
class Lateness:
    """How late recent claims were, measured from each row's due time."""

    samples: int
    median: timedelta | None
    p95: timedelta | None
    worst: timedelta | None


@dataclass(frozen=True)
class ClockHealth:
    now: datetime
    last_runs: list[ClockRun]
    backlog: int
    oldest_due: datetime | None
    lateness: Lateness
    heartbeats: list[ConsumerHeartbeat]
    gauges: list[tuple[Gauge, dict[str, float]]] = field(default_factory=list)  # the wings' numbers
    tick_interval: timedelta = timedelta(minutes=1)

    @property
    def tick_stale_after(self) -> timedelta:
        return TICKS_MISSED_BEFORE_STALE * self.tick_interval

    @property
    def last_tick(self) -> ClockRun | None:
        return next((run for run in self.last_runs if run.kind == TICK_KIND), None)

    @property
    def tick_stale(self) -> bool:
        tick = self.last_tick
        return tick is None or self.now - tick.started_at > self.tick_stale_after

    def heartbeat_stale(self, beat: ConsumerHeartbeat) -> bool:
        return self.now - beat.beat_at > HEARTBEAT_STALE_AFTER

    @property
    def alive_consumers(self) -> int:
        return sum(1 for beat in self.heartbeats if not self.heartbeat_stale(beat))

    @property
    def consumer_alive(self) -> bool:
        return self.alive_consumers > 0


def last_runs(session: Session) -> list[ClockRun]:
    """The latest run of each kind of clock job, by kind."""
    latest = (select(ClockRun.kind, func.max(ClockRun.started_at).label("started"))
              .group_by(ClockRun.kind).subquery())
    rows = session.scalars(
        select(ClockRun).join(latest, (ClockRun.kind == latest.c.kind) & (ClockRun.started_at == latest.c.started))
        .order_by(ClockRun.kind, ClockRun.id.desc())
    )
    seen, runs = set(), []
    for run in rows:
        if run.kind not in seen:
            seen.add(run.kind)
            runs.append(run)
    return runs


def backlog(session: Session, now: datetime) -> tuple[int, datetime | None]:
    """Rows due and not yet claimed, and the due time of the oldest of them."""
    due_at = func.coalesce(ScheduledAction.next_attempt_at, ScheduledAction.publish_at, type_=UTCDateTime())
    count, oldest = session.execute(select(func.count(), func.min(due_at, type_=UTCDateTime())).where(queued_and_due_by(now))).one()
    return count, oldest


def recent_lateness(session: Session, now: datetime, window: timedelta = timedelta(hours=1),
                    limit: int = 2000) -> Lateness:
    """Claim lateness over the last ``window``: each claim's time minus its row's due time.

    Read from the newest claim events backwards by primary key, at most ``limit`` of them,
    so the cost is bounded however long the history is.
    """
    rows = session.execute(
        select(ActionEvent.at, ScheduledAction.publish_at, ScheduledAction.next_attempt_at)
        .join(ScheduledAction, ScheduledAction.id == ActionEvent.action_id)
        .where(ActionEvent.to_status == "submitted")
        .order_by(ActionEvent.id.desc()).limit(limit)
    ).all()
    since = now - window
    delays = sorted(max(claimed - (retry_at or publish_at), timedelta(0))
                    for claimed, publish_at, retry_at in rows if claimed >= since)
    if not delays:
        return Lateness(0, None, None, None)
    return Lateness(
        samples=len(delays),
        median=delays[len(delays) // 2],
        p95=delays[min(len(delays) - 1, int(len(delays) * 0.95))],
        worst=delays[-1],
    )


def heartbeats(session: Session) -> list[ConsumerHeartbeat]:
    return list(session.scalars(select(ConsumerHeartbeat).order_by(ConsumerHeartbeat.beat_at.desc())))


def clock_health(session: Session, now: datetime, gauges: list[Gauge] = (),
                 tick_interval: timedelta = timedelta(minutes=1)) -> ClockHealth:
    """Everything the health page, ``/healthz`` and ``/metrics`` show, read now; ``gauges`` are the wings'."""
    count, oldest = backlog(session, now)
    return ClockHealth(now=now, last_runs=last_runs(session), backlog=count, oldest_due=oldest,
                       lateness=recent_lateness(session, now), heartbeats=heartbeats(session),
                       gauges=[(gauge, gauge.read(session, now)) for gauge in gauges], tick_interval=tick_interval)
