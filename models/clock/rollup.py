"""The clock's rollups: what happened in each minute, and in each hour, written by the tick into its clock run.

Each tick rolls up every whole minute that ended at least :data:`ROLLUP_DELAY` ago and that
no earlier tick rolled up (at most :data:`MAX_CATCH_UP` of them after downtime), and stores
them in its summary under ``rollup``. The delay leaves a minute for dispatches and clock jobs
running across the boundary to commit, so a minute is counted once it is complete. One
minute's rollup::

    {"minute": "2026-06-01T12:00:00Z",          # the minute [12:00, 12:01) UTC
     "claims": 12, "p50": 0.4, "p95": 1.2, "max": 1.9, "sum": 6.1,   # firing lateness, seconds
     "histogram": [3, 5, ...],                   # claims per LATENESS_BUCKETS bound, then beyond the last
     "published": 11, "failed": 1, "missed": 0,  # moves into those statuses during the minute
     "backlog": 0,                               # due and unclaimed when a tick started in it (None: none did)
     "jobs": {"tick": {"runs": 1, "errors": 0, "unfinished": 0, "first": "...", "last": "...",
                       "longest": 0.2}}}         # clock runs started in the minute, by kind

When the minutes it rolls up finish an hour, the tick also merges that hour's minutes into
an hour rollup (:func:`merge`: the same figures, ``"hour"`` and the ``"minutes"`` it holds
instead of ``"minute"``, ``p50`` the typical minute's median and ``p95`` the worst minute's,
and per job the longest ``gap`` between two starts) under ``rollup_hours``, and marks its
clock run with ``rollup_hour`` (indexed), so a week of charts reads 168 hours, not 10,080
minutes.

Firing lateness is each claim's time minus its row's due time (``next_attempt_at`` when set,
else ``publish_at``). ``failed`` counts ``submitted → failed`` (a provider's refusal or an
unknown outcome); ``missed`` counts ``queued → failed`` (missed windows, exhausted attempts,
legacy duplicates, restores). Several consumers may roll up the same minute; readers keep one.

Every query here reads one minute or one hour through an index (``action_events.at``,
``clock_runs.started_at``, ``clock_runs (kind, started_at)``), so a rollup costs the same
however long the history is; the claims of a minute are read in full up to
:data:`MAX_CLAIMS_READ`, beyond which the percentiles come from the first ones read and
``sampled`` says so.
"""

from collections import Counter
from datetime import datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ScheduledAction, Status, queued_and_due_by
from models.clock.tables import ClockRun
from models.core.database import read_session, write_session
from models.core.types import UTCDateTime

ROLLUP_DELAY = timedelta(minutes=1)
MAX_CATCH_UP = 60  # minutes rolled up by one tick after downtime; older ones stay gaps
MAX_CLAIMS_READ = 50_000
# Upper bounds, in seconds, of the lateness histogram's buckets (Prometheus's ``le``).
LATENESS_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
_LOOK_BACK_RUNS = 10


def iso(instant: datetime) -> str:
    return instant.isoformat().replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def floor_minute(instant: datetime) -> datetime:
    return instant.replace(second=0, microsecond=0)


def backlog(session: Session, now: datetime) -> tuple[int, datetime | None]:
    """Rows due and not yet claimed, and the due time of the oldest of them."""
    due_at = func.coalesce(ScheduledAction.next_attempt_at, ScheduledAction.publish_at, type_=UTCDateTime())
    count, oldest = session.execute(select(func.count(), func.min(due_at, type_=UTCDateTime()))
                                    .where(queued_and_due_by(now))).one()
    return count, oldest


def backlog_within(session: Session, now: datetime, at_most: int) -> tuple[int, datetime | None]:
    """:func:`backlog` counted no further than ``at_most + 1`` rows, in the tick's own order (its partial index).

    A count above ``at_most`` means "more than that"; the oldest due time is then the oldest among the rows
    counted, the earliest by ``publish_at``. A million rows due cost this what ten thousand do.
    """
    due_at = func.coalesce(ScheduledAction.next_attempt_at, ScheduledAction.publish_at, type_=UTCDateTime())
    first = (select(due_at.label("due_at")).where(queued_and_due_by(now))
             .order_by(ScheduledAction.publish_at, ScheduledAction.id).limit(at_most + 1).subquery())
    count, oldest = session.execute(select(func.count(), func.min(first.c.due_at, type_=UTCDateTime()))).one()
    return count, oldest


# -- writing: the tick ---------------------------------------------------------------------


def record_rollups(run_id: int, *, now: datetime, tick_kind: str, engine: Engine | None = None) -> dict:
    """Roll up the minutes due (and the hours they finish) onto clock run ``run_id``; returns both lists.

    They are written to the run's summary at once, before the run finishes, so a tick
    that dies later keeps them; its final summary carries them again.
    """
    with read_session(engine) as session:
        minutes = roll_up(session, minutes_to_roll_up(session, now, tick_kind), tick_kind)
        hours = finished_hours(session, minutes, tick_kind)
    rolled = {"rollup": minutes, "rollup_hours": hours}
    if minutes:
        with write_session(engine) as session:
            session.execute(update(ClockRun).where(ClockRun.id == run_id).values(
                summary=rolled, rollup_hour=parse_iso(hours[-1]["hour"]) if hours else None))
    return rolled


def last_rolled_minute(session: Session, tick_kind: str) -> datetime | None:
    """The latest minute a recent tick rolled up, read from the last few ticks (finished or not)."""
    summaries = session.scalars(
        select(ClockRun.summary).where(ClockRun.kind == tick_kind)
        .order_by(ClockRun.started_at.desc()).limit(_LOOK_BACK_RUNS)
    )
    for summary in summaries:
        if isinstance(summary, dict) and summary.get("rollup"):
            return parse_iso(summary["rollup"][-1]["minute"])
    return None


def minutes_to_roll_up(session: Session, now: datetime, tick_kind: str) -> list[datetime]:
    """The whole minutes this tick rolls up, oldest first."""
    end = floor_minute(now) - ROLLUP_DELAY  # exclusive: the last minute rolled up ends here
    last = last_rolled_minute(session, tick_kind)
    # The first rollup ever covers one minute: there was nothing to count before it.
    start = end - MINUTE if last is None else max(end - MAX_CATCH_UP * MINUTE, last + MINUTE)
    count = int((end - start) / MINUTE)
    return [start + n * MINUTE for n in range(max(count, 0))]


def roll_up(session: Session, minutes: list[datetime], tick_kind: str) -> list[dict]:
    """One rollup per minute of ``minutes``."""
    return [_one_minute(session, minute, tick_kind) for minute in minutes]


def _one_minute(session: Session, minute: datetime, tick_kind: str) -> dict:
    end = minute + MINUTE
    in_minute = (ActionEvent.at >= minute, ActionEvent.at < end)
    delays = sorted(
        max((claimed - (retry_at or publish_at)).total_seconds(), 0.0)
        for claimed, publish_at, retry_at in session.execute(
            select(ActionEvent.at, ScheduledAction.publish_at, ScheduledAction.next_attempt_at)
            .join(ScheduledAction, ScheduledAction.id == ActionEvent.action_id)
            .where(*in_minute, ActionEvent.to_status == Status.SUBMITTED.value)
            .limit(MAX_CLAIMS_READ)
        )
    )
    claims = len(delays)
    if claims == MAX_CLAIMS_READ:
        claims = session.scalar(select(func.count()).select_from(ActionEvent)
                                .where(*in_minute, ActionEvent.to_status == Status.SUBMITTED.value))
    moves = Counter({(source, target): n for source, target, n in session.execute(
        select(ActionEvent.from_status, ActionEvent.to_status, func.count())
        .where(*in_minute, ActionEvent.to_status.in_([Status.PUBLISHED.value, Status.FAILED.value]))
        .group_by(ActionEvent.from_status, ActionEvent.to_status)
    )})
    runs = session.execute(
        select(ClockRun.kind, ClockRun.started_at, ClockRun.finished_at, ClockRun.error, ClockRun.summary)
        .where(ClockRun.started_at >= minute, ClockRun.started_at < end)
        .order_by(ClockRun.started_at)
    ).all()
    backlogs = [run.summary["backlog"] for run in runs if run.kind == tick_kind and isinstance(run.summary, dict)
                and isinstance(run.summary.get("backlog"), int)]
    rollup = {
        "minute": iso(minute),
        "claims": claims,
        **lateness_figures(delays),
        "published": sum(n for (_, target), n in moves.items() if target == Status.PUBLISHED.value),
        "failed": moves[(Status.SUBMITTED.value, Status.FAILED.value)],
        "missed": moves[(Status.QUEUED.value, Status.FAILED.value)],
        "backlog": max(backlogs) if backlogs else None,
        "jobs": _jobs(runs),
    }
    if claims > len(delays):
        rollup["sampled"] = True
    return rollup


def lateness_figures(delays: list[float]) -> dict:
    """p50, p95 (nearest rank), max, sum and the histogram of sorted ``delays`` (seconds)."""
    histogram = [0] * (len(LATENESS_BUCKETS) + 1)
    if not delays:
        return {"p50": None, "p95": None, "max": None, "sum": 0.0, "histogram": histogram}
    for delay in delays:
        histogram[next((n for n, bound in enumerate(LATENESS_BUCKETS) if delay <= bound), len(LATENESS_BUCKETS))] += 1
    return {
        "p50": round(delays[(len(delays) - 1) // 2], 3),
        "p95": round(delays[min(len(delays) - 1, -(-len(delays) * 95 // 100) - 1)], 3),
        "max": round(delays[-1], 3),
        "sum": round(sum(delays), 3),
        "histogram": histogram,
    }


def _jobs(runs) -> dict:
    jobs: dict[str, dict] = {}
    for run in runs:
        job = jobs.setdefault(run.kind, {"runs": 0, "errors": 0, "unfinished": 0, "first": iso(run.started_at),
                                         "last": iso(run.started_at), "longest": 0.0})
        job["runs"] += 1
        job["errors"] += run.error is not None
        job["unfinished"] += run.finished_at is None
        job["last"] = iso(run.started_at)
        if run.finished_at is not None:
            job["longest"] = max(job["longest"], round((run.finished_at - run.started_at).total_seconds(), 3))
    return jobs


def finished_hours(session: Session, minutes: list[dict], tick_kind: str) -> list[dict]:
    """The hour rollups of every hour that ``minutes`` (just rolled up) finish, from all of that hour's minutes."""
    hours = []
    for rollup in minutes:
        minute = parse_iso(rollup["minute"])
        if minute.minute != 59:
            continue
        hour = minute.replace(minute=0)
        found = minute_rollups(session, hour, hour + HOUR, tick_kind)
        found.update({parse_iso(r["minute"]): r for r in minutes if hour <= parse_iso(r["minute"]) < hour + HOUR})
        hours.append({"hour": iso(hour), **merge([found[at] for at in sorted(found)])})
    return hours


# -- reading --------------------------------------------------------------------------------


def minute_rollups(session: Session, since: datetime, until: datetime, tick_kind: str) -> dict[datetime, dict]:
    """The minute rollups of [since, until), one per minute (the last written wins).

    A minute is rolled up after it ends, so the tick runs read are those started from
    ``since`` on: one range over the ``(kind, started_at)`` index.
    """
    found: dict[datetime, dict] = {}
    for rollups in session.scalars(
        select(ClockRun.summary["rollup"]).where(ClockRun.kind == tick_kind, ClockRun.started_at >= since)
        .order_by(ClockRun.started_at)
    ):
        for rollup in rollups or ():
            at = parse_iso(rollup["minute"])
            if since <= at < until:
                found[at] = rollup
    return found


def hour_rollups(session: Session, since: datetime) -> dict[datetime, dict]:
    """The hour rollups from ``since`` on, one per hour, found through the ``rollup_hour`` index
    (only ticks set it)."""
    found: dict[datetime, dict] = {}
    for rollups in session.scalars(
        select(ClockRun.summary["rollup_hours"]).where(ClockRun.rollup_hour >= since).order_by(ClockRun.rollup_hour)
    ):
        for rollup in rollups or ():
            at = parse_iso(rollup["hour"])
            if at >= since:
                found[at] = rollup
    return found


def merge(parts: list[dict]) -> dict:
    """Rollups of consecutive stretches (minutes or hours, in time order) as one.

    Counts add up; ``p95`` is the worst part's (an upper bound of the whole's), ``max`` the
    latest claim, ``p50`` the claim-weighted median of the parts' medians (a typical minute);
    a job's ``gap`` is the longest time between two of its starts within the whole.
    """
    claimed = [part for part in parts if part.get("claims") and part.get("p50") is not None]
    backlogs = [part["backlog"] for part in parts if part.get("backlog") is not None]
    histogram = [0] * (len(LATENESS_BUCKETS) + 1)
    for part in parts:
        for n, count in enumerate((part.get("histogram") or ())[:len(histogram)]):
            histogram[n] += count
    jobs: dict[str, dict] = {}
    for part in parts:
        for kind, job in (part.get("jobs") or {}).items():
            merged = jobs.get(kind)
            if merged is None:
                jobs[kind] = {**job, "gap": job.get("gap", 0.0)}
                continue
            between = (parse_iso(job["first"]) - parse_iso(merged["last"])).total_seconds()
            merged.update(runs=merged["runs"] + job["runs"], errors=merged["errors"] + job["errors"],
                          unfinished=merged["unfinished"] + job["unfinished"], last=job["last"],
                          longest=max(merged["longest"], job["longest"]),
                          gap=round(max(merged["gap"], job.get("gap", 0.0), between), 3))
    return {
        "minutes": sum(part.get("minutes", 1) for part in parts),
        "claims": sum(part.get("claims", 0) for part in parts),
        "p50": _weighted_median([(part["p50"], part["claims"]) for part in claimed]),
        "p95": max((part["p95"] for part in claimed if part.get("p95") is not None), default=None),
        "max": max((part["max"] for part in claimed if part.get("max") is not None), default=None),
        "sum": round(sum(part.get("sum") or 0.0 for part in parts), 3),
        "histogram": histogram,
        "published": sum(part.get("published", 0) for part in parts),
        "failed": sum(part.get("failed", 0) for part in parts),
        "missed": sum(part.get("missed", 0) for part in parts),
        "backlog": max(backlogs) if backlogs else None,
        "jobs": jobs,
    }


def _weighted_median(pairs: list[tuple[float, int]]) -> float | None:
    if not pairs:
        return None
    half = sum(weight for _, weight in pairs) / 2
    running = 0
    for value, weight in sorted(pairs):
        running += weight
        if running >= half:
            return value
    return max(pairs)[0]
