"""How the clock is doing: each clock job's last run, backlog, lateness, heartbeats, and trends.

Read-only queries for the health page, ``/healthz`` and ``/metrics``. The clock is one
per installation, so these span every workspace and return numbers, never content.

Trends (the last 24 hours, the last 7 days) come from the rollups the tick writes into
its clock runs (:mod:`models.clock.rollup`): the hour rollups of the span through the
``rollup_hour`` index, and the minute rollups of the hours not finished yet through the
``(kind, started_at)`` index; a few hundred rows however long or busy the history. They
are merged into buckets of whole hours:

| figure         | a bucket shows                                                                 |
|----------------|--------------------------------------------------------------------------------|
| claims         | how many rows were claimed                                                     |
| p50            | the median of a typical minute (the claim-weighted median of the medians)    |
| p95            | the worst minute's p95, an upper bound of the bucket's own                     |
| max            | the latest claim                                                               |
| published, failed, missed | moves into those statuses                                           |
| backlog        | the largest backlog a tick found                                               |
| a job's lag    | the longest time the job went without starting, up to the bucket's end         |
| runs, errors, unfinished | the job's runs started in the bucket, those that raised, those that never finished |
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ScheduledAction
from models.clock.heartbeats import HEARTBEAT_INTERVAL
from models.clock.rollup import (HOUR, LATENESS_BUCKETS, backlog, backlog_within, hour_rollups, merge, minute_rollups,
                                 parse_iso)
from models.clock.tables import ClockRun, ConsumerHeartbeat
from models.clock.tick import TICK as TICK_KIND
from models.core.hooks import Gauge

# Three missed ticks is an outage, not jitter: three minutes at the default interval.
TICKS_MISSED_BEFORE_STALE = 3
# A consumer beats every HEARTBEAT_INTERVAL; three missed beats and it counts as gone.
HEARTBEAT_STALE_AFTER = 3 * HEARTBEAT_INTERVAL
# A clock run not finished this long after it started died: a pass is seconds long.
NEVER_FINISHED_AFTER = timedelta(minutes=10)
# Kinds of clock job shown beside the ones the caller names: any that ran this recently.
RECENT_KINDS_WITHIN = timedelta(days=7)

__all__ = ["backlog", "clock_health", "ClockHealth", "JobStatus", "Trend", "read_trends", "last_hour_lateness"]


@dataclass(frozen=True)
class Lateness:
    """How late recent claims were, measured from each row's due time."""

    samples: int
    median: timedelta | None
    p95: timedelta | None
    worst: timedelta | None


@dataclass(frozen=True)
class JobStatus:
    """One clock job: its latest run, its latest successful run, and what state that leaves it in."""

    kind: str
    last_run: ClockRun | None
    last_success: ClockRun | None
    now: datetime

    @property
    def state(self) -> str:
        """``ok``, ``errored``, ``running``, ``never finished`` or ``never ran``."""
        run = self.last_run
        if run is None:
            return "never ran"
        if run.error:
            return "errored"
        if run.finished_at is None:
            return "never finished" if self.now - run.started_at > NEVER_FINISHED_AFTER else "running"
        return "ok"

    @property
    def last_success_duration(self) -> timedelta | None:
        run = self.last_success
        return None if run is None else run.finished_at - run.started_at


# The health page, /healthz and /metrics count the backlog live up to here; above it they show the last tick's count.
BACKLOG_COUNTED_AT_MOST = 10_000


@dataclass(frozen=True)
class ClockHealth:
    now: datetime
    jobs: list[JobStatus]
    backlog: int
    oldest_due: datetime | None
    lateness: Lateness
    heartbeats: list[ConsumerHeartbeat]
    gauges: list[tuple[Gauge, dict[str, float]]] = field(default_factory=list)  # the wings' numbers
    tick_interval: timedelta = timedelta(minutes=1)
    # Above BACKLOG_COUNTED_AT_MOST the backlog is not counted live: it is the last tick's count (when that
    # tick found more), else BACKLOG_COUNTED_AT_MOST + 1, read "more than"; ``backlog_counted_at`` says which.
    backlog_exact: bool = True
    backlog_counted_at: datetime | None = None
    backlog_counted_at_most: int = BACKLOG_COUNTED_AT_MOST

    @property
    def last_runs(self) -> list[ClockRun]:
        """The latest run of each job that has run, by kind."""
        return [job.last_run for job in self.jobs if job.last_run is not None]

    @property
    def tick_stale_after(self) -> timedelta:
        return TICKS_MISSED_BEFORE_STALE * self.tick_interval

    @property
    def last_tick(self) -> ClockRun | None:
        return next((job.last_run for job in self.jobs if job.kind == TICK_KIND), None)

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


def job_statuses(session: Session, now: datetime, kinds: list[str] = ()) -> list[JobStatus]:
    """Each clock job's status: the ``kinds`` named (the clock's list), and any other that ran lately.

    Two index seeks per kind on ``(kind, started_at)``: the latest run, the latest success.
    """
    recent = session.scalars(select(ClockRun.kind).distinct().where(ClockRun.started_at >= now - RECENT_KINDS_WITHIN))
    statuses = []
    for kind in sorted({TICK_KIND, *kinds, *recent}):
        latest = select(ClockRun).where(ClockRun.kind == kind).order_by(ClockRun.started_at.desc(), ClockRun.id.desc())
        statuses.append(JobStatus(
            kind=kind, now=now,
            last_run=session.scalars(latest.limit(1)).first(),
            last_success=session.scalars(latest.where(ClockRun.finished_at.is_not(None), ClockRun.error.is_(None))
                                         .limit(1)).first(),
        ))
    return statuses


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
                 tick_interval: timedelta = timedelta(minutes=1), kinds: list[str] = ()) -> ClockHealth:
    """Everything the health page, ``/healthz`` and ``/metrics`` show, read now; ``gauges`` are the wings',
    ``kinds`` the clock jobs there should be (a job that never ran shows as such)."""
    cap = BACKLOG_COUNTED_AT_MOST
    count, oldest = backlog_within(session, now, cap)
    exact, counted_at = count <= cap, None
    if not exact:
        counted = last_tick_backlog(session)
        if counted is not None and counted[0] > count:
            count, counted_at = counted
    return ClockHealth(now=now, jobs=job_statuses(session, now, kinds), backlog=count, oldest_due=oldest,
                       lateness=recent_lateness(session, now), heartbeats=heartbeats(session),
                       gauges=[(gauge, gauge.read(session, now)) for gauge in gauges], tick_interval=tick_interval,
                       backlog_exact=exact, backlog_counted_at=counted_at, backlog_counted_at_most=cap)


def last_tick_backlog(session: Session) -> tuple[int, datetime] | None:
    """The backlog the latest tick counted as it started, and when it started (None if no recent tick did)."""
    for started_at, summary in session.execute(select(ClockRun.started_at, ClockRun.summary)
                                               .where(ClockRun.kind == TICK_KIND)
                                               .order_by(ClockRun.started_at.desc()).limit(5)):
        if isinstance(summary, dict) and isinstance(summary.get("backlog"), int):
            return summary["backlog"], started_at
    return None


# -- trends ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bucket:
    """The rollups of one stretch of time, merged (see the module docstring)."""

    start: datetime
    end: datetime
    minutes: int  # minutes with a rollup; 0 means no tick rolled this stretch up
    claims: int = 0
    p50: float | None = None
    p95: float | None = None
    max: float | None = None
    published: int = 0
    failed: int = 0
    missed: int = 0
    backlog: int | None = None


@dataclass(frozen=True)
class JobBucket:
    """One clock job over one bucket."""

    runs: int
    errors: int
    unfinished: int
    lag: float | None  # seconds; None: the job had never started by then


@dataclass(frozen=True)
class Trend:
    span: timedelta
    step: timedelta
    buckets: list[Bucket]
    jobs: dict[str, list[JobBucket]]  # by kind, one per bucket


def read_trends(session: Session, now: datetime, spans: list[tuple[timedelta, timedelta]],
                kinds: list[str] = ()) -> list[Trend]:
    """One :class:`Trend` per ``(span, step)`` (steps of whole hours), from one read of the rollups.

    Whole hours come from the hour rollups (one index range over ``rollup_hour``), the
    hours not yet finished from their minute rollups (one range over ``(kind, started_at)``,
    an hour or two of ticks), so a week costs a few hundred rows however busy it was.
    """
    windows = [(_window(now, span, step), span, step) for span, step in spans]
    since = min(start for (start, _), _, _ in windows)
    hours = hour_rollups(session, since)
    tail_from = max(since, max(hours) + HOUR) if hours else since
    parts = [(at, rollup) for at, rollup in sorted(hours.items())]
    parts += sorted(minute_rollups(session, tail_from, now, TICK_KIND).items(), key=lambda item: item[0])
    seen_kinds = sorted({*kinds, *(kind for _, rollup in parts for kind in rollup.get("jobs", {}))})
    trends = []
    for (start, end), span, step in windows:
        starts_before = {kind: _last_start_before(session, parts, kind, start) for kind in seen_kinds}
        trends.append(_trend(parts, start, end, span, step, now, seen_kinds, starts_before))
    return trends


def _last_start_before(session: Session, parts: list[tuple[datetime, dict]], kind: str,
                       start: datetime) -> datetime | None:
    """When ``kind`` last started before ``start``: from the rollups read when they reach back so far, else
    one index seek on ``(kind, started_at)``."""
    seen = [parse_iso(rollup["jobs"][kind]["last"]) for at, rollup in parts
            if at < start and kind in rollup.get("jobs", {})]
    if seen:
        return max(seen)
    return session.scalar(select(func.max(ClockRun.started_at)).where(ClockRun.kind == kind, ClockRun.started_at < start))


def _window(now: datetime, span: timedelta, step: timedelta) -> tuple[datetime, datetime]:
    """Buckets aligned on ``step`` (from the epoch, UTC), the last one holding ``now``."""
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    end = epoch + ((now - epoch) // step + 1) * step
    return end - span, end


def _trend(parts: list[tuple[datetime, dict]], start: datetime, end: datetime, span: timedelta, step: timedelta,
           now: datetime, kinds: list[str], starts_before: dict[str, datetime | None]) -> Trend:
    grouped: list[list[dict]] = [[] for _ in range(int(span / step))]
    for at, rollup in parts:
        if start <= at < end:
            grouped[int((at - start) / step)].append(rollup)
    merged = [merge(rollups) if rollups else None for rollups in grouped]
    buckets = [_bucket(start + n * step, start + (n + 1) * step, whole) for n, whole in enumerate(merged)]
    jobs = {}
    for kind in kinds:
        last_start = starts_before.get(kind)
        series = []
        for n, whole in enumerate(merged):
            job = (whole or {}).get("jobs", {}).get(kind)
            longest = None
            if job:
                longest = job.get("gap", 0.0)
                if last_start is not None:
                    longest = max(longest, (parse_iso(job["first"]) - last_start).total_seconds())
                last_start = parse_iso(job["last"])
            if last_start is not None:
                until = min(start + (n + 1) * step, now)
                longest = max(longest or 0.0, (until - last_start).total_seconds())
            series.append(JobBucket(runs=job["runs"] if job else 0, errors=job["errors"] if job else 0,
                                    unfinished=job["unfinished"] if job else 0,
                                    lag=None if longest is None else round(longest, 1)))
        jobs[kind] = series
    return Trend(span=span, step=step, buckets=buckets, jobs=jobs)


def _bucket(start: datetime, end: datetime, whole: dict | None) -> Bucket:
    if whole is None:
        return Bucket(start=start, end=end, minutes=0)
    return Bucket(start=start, end=end, minutes=whole["minutes"], claims=whole["claims"], p50=whole["p50"],
                  p95=whole["p95"], max=whole["max"], published=whole["published"], failed=whole["failed"],
                  missed=whole["missed"], backlog=whole["backlog"])


@dataclass(frozen=True)
class LatenessHistogram:
    """Claims over a window by lateness: cumulative counts per ``le`` bound, and their sum in seconds."""

    buckets: list[tuple[float, int]]  # (0.25, n), ..., (inf, total)
    total_seconds: float


def last_hour_lateness(session: Session, now: datetime) -> LatenessHistogram:
    """The firing-lateness histogram of the last 60 rolled-up minutes."""
    counts = [0] * (len(LATENESS_BUCKETS) + 1)
    total = 0.0
    for rollup in minute_rollups(session, now - timedelta(hours=1), now, TICK_KIND).values():
        for n, value in enumerate(rollup.get("histogram") or ()):
            if n < len(counts):
                counts[n] += value
        total += rollup.get("sum") or 0.0
    cumulative, running = [], 0
    for bound, value in zip([*LATENESS_BUCKETS, float("inf")], counts):
        running += value
        cumulative.append((bound, running))
    return LatenessHistogram(buckets=cumulative, total_seconds=round(total, 3))

