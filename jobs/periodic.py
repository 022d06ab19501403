"""Every clock job and its cadence, in one place: the whole clock on one screen.

Crontabs are evaluated in UTC. Every consumer with periodic tasks on enqueues each job,
a restarted consumer may run one twice in a minute, and minutes when no consumer ran are
never caught up; so every job processes "everything due up to now", idempotently, and
takes its exclusivity from the database (claims, guarded updates), never from Huey locks.

Adding a job: write its one-pass function (app context in, summary dict out; the domain
work lives in ``models/``, recorded as a clock run with ``models.clock_runs.run_recorded``),
then add one line below. It becomes the periodic Huey task ``<name>`` and the command
``tickwork <name>`` (one pass now, summary printed as JSON).
"""

import calendar
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from huey import crontab

from jobs import alerts, clock, retention, works
from jobs.queue import huey, task_app


@dataclass(frozen=True)
class ClockJob:
    name: str  # the Huey task name and the command name
    cadence: Callable[[datetime], bool]  # a huey.crontab (UTC), or any test of the minute
    run: Callable[[], dict]  # one pass, inside an app context; returns its summary
    help: str
    # What a pass would do, writing nothing: the command then takes ``--dry-run``.
    dry_run: Callable[[], dict] | None = None
    # How often it runs, given the app's policy: a job is stale after three of these without a start.
    period: Callable[..., timedelta] = lambda policy: timedelta(minutes=1)


EVERY_MINUTE = crontab(minute="*")
EVERY_FIVE_MINUTES = crontab(minute="*/5")
EVERY_HOUR = crontab(minute="7")  # "daily" work runs hourly: a redeploy cannot skip it for a day
HOURLY = lambda policy: timedelta(hours=1)  # noqa: E731


def every_work_dispatch_interval(timestamp) -> bool:
    """Every ``work_dispatch_interval`` minutes (the policy's; whole minutes dividing the hour), in UTC."""
    minutes = int(task_app().extensions["tickwork"].policy.work_dispatch_interval.total_seconds() // 60)
    return crontab(minute=f"*/{minutes}")(timestamp)


def every_tick_interval(when: datetime) -> bool:
    """The tick's cadence: the minutes (UTC, since the epoch) that are a multiple of the policy's
    ``tick_interval``, read from the app the consumer runs, so ``TICKWORK_POLICY_JSON`` sets it."""
    minutes = task_app().extensions["tickwork"].policy.tick_minutes
    return (calendar.timegm(when.timetuple()) // 60) % minutes == 0


def clock_job_periods(policy) -> dict[str, timedelta]:
    """Each clock job's period under ``policy``, by name (what the ``clock_stale`` rule measures against)."""
    return {job.name: job.period(policy) for job in CLOCK_JOBS}


def alerts_pass(rules=None, record: bool = True) -> dict:
    """One pass of the alert rules against the clock as listed here (inside an app context)."""
    return alerts.alerts_once(clock_job_periods(task_app().extensions["tickwork"].policy), rules=rules, record=record)


CLOCK_JOBS: list[ClockJob] = [
    ClockJob("tick", every_tick_interval, clock.tick_once,
             "Recover lost workers, fail misfires, dispatch every due action, hand off those due within the minute.",
             period=lambda policy: policy.tick_interval),
    ClockJob("reconcile", EVERY_MINUTE, clock.reconcile_once,
             "Keep the queue in step with approved posts: insert, move and withdraw their rows."),
    ClockJob("expire-posts", EVERY_MINUTE, clock.expire_posts_once,
             "Expire every post still in review when its time passes, and tell its author; a new time returns it "
             "to draft."),
    ClockJob("forget-keys", EVERY_HOUR, clock.forget_keys_once,
             "Forget Idempotency-Key records older than the time keys are kept (24 hours by default).", period=HOURLY),
    ClockJob("expand", EVERY_HOUR, clock.expand_once,
             "Materialize every active recurring rule's next 14 days of occurrences; catch up missed hours.",
             period=HOURLY),
    ClockJob("dispatch-works", every_work_dispatch_interval, works.dispatch_works_once,
             "Recover stuck generations, then claim each due work schedule and hand its run to the works queue.",
             period=lambda policy: policy.work_dispatch_interval),
    ClockJob("drip-advance", EVERY_MINUTE, clock.drip_advance_once,
             "Advance drip enrollments: settle ended sends, re-mint held ones, mint every step due within the minute."),
    ClockJob("archive", EVERY_HOUR, retention.archive_once,
             "Copy terminal history older than TICKWORK_RETENTION_DAYS into monthly archive files, then prune it; "
             "prune old clock runs, outbox entries and heartbeats.", dry_run=retention.archive_dry_run, period=HOURLY),
    ClockJob("refresh-tokens", EVERY_FIVE_MINUTES, clock.refresh_tokens_once,
             "Renew connected accounts' tokens ahead of expiry, one refresher per channel; a refresh the network "
             "refuses puts the channel in reconnect needed.", period=lambda policy: timedelta(minutes=5)),
    ClockJob("alerts", EVERY_MINUTE, alerts_pass,
             "Evaluate the alert rules: raise what holds, remind after each cooldown, resolve what stopped; "
             "prints {fired, resolved, firing}."),
]


_registered: dict = {}


def _periodic_task(job: ClockJob):
    def run_clock_job():
        with task_app().app_context():
            return job.run()

    run_clock_job.__doc__ = job.help
    return huey.periodic_task(job.cadence, name=job.name)(run_clock_job)


def register_periodic_tasks() -> dict:
    """Register every job of CLOCK_JOBS with Huey once; returns name → task."""
    for job in CLOCK_JOBS:
        if job.name not in _registered:
            _registered[job.name] = _periodic_task(job)
    return _registered

