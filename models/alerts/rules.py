"""The alert rules: what each one watches, its defaults, and how a pass reads whether it holds.

Each rule reads the database as it is now and answers the findings that hold (one per
subject); :mod:`models.alerts.evaluation` turns findings into alerts that fire, remind and
resolve. A rule is the operator's (scope ``instance``: the clock, the consumers, the disk)
or a workspace's (one finding per workspace and subject). Every threshold, window and
cooldown has a default that makes sense on day one; the operator changes the instance
rules (and the defaults of the workspace rules) with ``TICKWORK_ALERT_RULES_JSON``, an admin
a workspace's own in its settings (``alert_rule_settings``).

| rule                  | scope              | holds when                                                          | threshold (default)         | window  |
|-----------------------|--------------------|---------------------------------------------------------------------|-----------------------------|---------|
| ``clock_stale``       | instance           | the tick has not started for N minutes; any other clock job for three of its periods (a job that never ran counts from the first tick) | 5 minutes (the tick) | — |
| ``no_consumer``       | instance           | no consumer of a queue has beaten for N minutes                     | 2 minutes                   | —       |
| ``lateness_p95``      | instance, workspace| the p95 of claim lateness over the window is above N seconds        | 60 seconds                  | 10 min  |
| ``channel_failures``  | workspace          | a channel failed more than N sends in the window (top reasons shown)| 10 sends                    | 10 min  |
| ``outcome_unknown``   | workspace          | rows failed as "outcome unknown" or "worker lost" in the window, still failed (a person must decide) | more than 0 | 24 h |
| ``channel_throttled`` | workspace          | a channel's rate, concurrency or Retry-After pause holds back a row due more than N minutes ago | 15 minutes | — |
| ``channel_reconnect_needed`` | workspace     | a channel's connected account needs reconnecting (a refresh refused, the token refused at a send), or its token has no refresh and expires within N days | 7 days (expiring tokens) | — |
| ``work_auto_paused``  | workspace          | a work's schedule was paused by its failures                         | —                           | —       |
| ``drip_step_failing`` | workspace          | a drip campaign's step failed more than N sends in the window       | 3 sends                     | 24 h    |
| ``recurring_missing`` | workspace          | a recurring rule's last N finished occurrences all failed           | 3 occurrences               | —       |
| ``archive_failing``   | instance           | the archive job's last run raised                                    | —                           | —       |
| ``disk_full``         | instance           | the disk holding the SQLite database is above N % full               | 90 %                        | —       |

Every rule's cooldown (how long after a message, while it still holds, before a reminder)
is 60 minutes by default. Reading a rule never writes.
"""

import math
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.actions.tables import ActionEvent, ActionHold, FailureCode, Origin, ScheduledAction, Status
from models.alerts.tables import INSTANCE, AlertRuleSetting, workspace_scope
from models.channels.connections import oauth_kinds, oauth_spec
from models.channels.providers.oauth import NO_REFRESH, network_name
from models.channels.tables import Channel, ChannelThrottle
from models.clock.tables import ClockRun, ConsumerHeartbeat
from models.clock.tick import TICK
from models.drips.tables import Enrollment
from models.works.tables import ScheduleStatus, Work, WorkSchedule

# A clock job other than the tick is stale after this many of its periods without a start.
PERIODS_BEFORE_STALE = 3
# Rows read at most per look at the recent events, so a pass costs the same however busy the hour was.
EVENTS_READ_AT_MOST = 20_000
# Reasons shown with a channel's failures.
TOP_REASONS = 3
# Rows named on an alert's page, at most.
ROWS_NAMED = 20


@dataclass(frozen=True)
class RuleSettings:
    """A rule's threshold (in the rule's own unit), window and cooldown, and whether it is on."""

    threshold: float
    window: timedelta | None
    cooldown: timedelta = timedelta(minutes=60)
    enabled: bool = True


@dataclass(frozen=True)
class Finding:
    """A rule holds for one subject: the alert to raise or keep, with the figures and what they concern."""

    rule: str
    subject: str
    figures: dict
    workspace_id: int | None = None
    title: str = ""

    @property
    def scope(self) -> str:
        return INSTANCE if self.workspace_id is None else workspace_scope(self.workspace_id)


@dataclass
class Context:
    """What a pass hands each rule: the session, the time, the settings and the clock's jobs."""

    session: Session
    now: datetime
    settings: Callable[[str, int | None], RuleSettings]
    job_periods: dict[str, timedelta] = field(default_factory=dict)  # clock job name → period
    database_path: str | None = None  # the SQLite file, when the database is one
    _failed_events: list | None = None

    def failed_events(self, since: datetime) -> list:
        """Rows that moved to ``failed`` since ``since`` (newest first, bounded), with what they were."""
        if self._failed_events is None or self._failed_since > since:
            self._failed_since = since
            self._failed_events = self.session.execute(
                select(ActionEvent.at, ScheduledAction.id, ScheduledAction.workspace_id, ScheduledAction.channel_id,
                       ScheduledAction.origin, ScheduledAction.thing_id, ScheduledAction.status,
                       ScheduledAction.failure_code, ScheduledAction.last_error, ScheduledAction.recurring_schedule_id)
                .join(ScheduledAction, ScheduledAction.id == ActionEvent.action_id)
                .where(ActionEvent.to_status == Status.FAILED.value, ActionEvent.at >= since)
                .order_by(ActionEvent.at.desc()).limit(EVENTS_READ_AT_MOST)
            ).all()
        return [row for row in self._failed_events if row.at >= since]


@dataclass(frozen=True)
class Rule:
    name: str
    scope: str  # "instance", "workspace" or "both"
    defaults: RuleSettings
    title: str  # what the alert says, in a few words
    evaluate: Callable[[Context], list[Finding]]
    unit: str = ""
    # Whether an open alert of this rule is one this pass could have raised: a pass that looked at
    # only some subjects (the web process's check of the tick) resolves only those.
    covers: Callable[[Context, str], bool] = lambda ctx, subject: True

    @property
    def about_the_engine(self) -> bool:
        """Whether the alert is about the engine itself, so it is also sent around the queue."""
        return self.name in ENGINE_RULES


def _iso(value: datetime | None) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value else None


def _workspaces(ctx: Context, rule: str, workspace_ids) -> dict[int, RuleSettings]:
    """The settings of ``rule`` in each workspace named, those that turned it off left out."""
    chosen = {}
    for workspace_id in sorted(set(workspace_ids)):
        settings = ctx.settings(rule, workspace_id)
        if settings.enabled:
            chosen[workspace_id] = settings
    return chosen


# -- the operator's rules ----------------------------------------------------------------------


def _first_tick(session: Session) -> datetime | None:
    return session.scalar(select(func.min(ClockRun.started_at)).where(ClockRun.kind == TICK))


def clock_stale(ctx: Context) -> list[Finding]:
    settings = ctx.settings("clock_stale", None)
    first_tick = None
    findings = []
    for kind, period in sorted(ctx.job_periods.items()):
        last = ctx.session.scalar(select(func.max(ClockRun.started_at)).where(ClockRun.kind == kind))
        allowed = (timedelta(minutes=settings.threshold) if kind == TICK else PERIODS_BEFORE_STALE * period)
        if last is None:
            first_tick = first_tick or _first_tick(ctx.session)
            if first_tick is None:
                continue  # nothing has ever run: there is no clock yet to be stale
            since = first_tick
        else:
            since = last
        late = ctx.now - since
        if late > allowed:
            findings.append(Finding("clock_stale", kind, {
                "job": kind, "last_started_at": _iso(last), "minutes_since": round(late.total_seconds() / 60, 1),
                "allowed_minutes": round(allowed.total_seconds() / 60, 1), "never_ran": last is None,
            }, title=f"Clock job {kind} has not run for {int(late.total_seconds() // 60)} minutes"))
    return findings


# The queues a consumer serves, by the suffix of its heartbeat's name (``host:pid`` or ``host:pid:works``).
QUEUES = ("default", "works")


def _queue_of(name: str) -> str:
    tail = name.rsplit(":", 1)[-1]
    return tail if tail in QUEUES and tail != "default" else "default"


def no_consumer(ctx: Context) -> list[Finding]:
    settings = ctx.settings("no_consumer", None)
    latest: dict[str, datetime] = {}
    for name, beat_at in ctx.session.execute(select(ConsumerHeartbeat.name, ConsumerHeartbeat.beat_at)):
        queue = _queue_of(name)
        latest[queue] = max(latest.get(queue, beat_at), beat_at)
    wanted = {"default"}
    active_works = ctx.session.scalar(select(func.count()).select_from(WorkSchedule).where(
        WorkSchedule.status == ScheduleStatus.ACTIVE.value))
    if active_works or "works" in latest:
        wanted.add("works")
    first_tick = None
    findings = []
    for queue in sorted(wanted):
        last = latest.get(queue)
        if last is None:
            first_tick = first_tick or _first_tick(ctx.session)
            if first_tick is None:
                continue
        since = last or first_tick
        gone = ctx.now - since
        if gone > timedelta(minutes=settings.threshold):
            findings.append(Finding("no_consumer", f"queue:{queue}", {
                "queue": queue, "last_beat_at": _iso(last), "minutes_since": round(gone.total_seconds() / 60, 1),
                "allowed_minutes": settings.threshold,
            }, title=f"No consumer of the {queue} queue is alive"))
    return findings


def _p95(delays: list[float]) -> float:
    delays = sorted(delays)
    return delays[min(len(delays) - 1, math.ceil(len(delays) * 0.95) - 1)]


def lateness_p95(ctx: Context) -> list[Finding]:
    instance = ctx.settings("lateness_p95", None)
    widest = instance.window
    for workspace_id, in ctx.session.execute(select(AlertRuleSetting.workspace_id).where(
            AlertRuleSetting.rule == "lateness_p95", AlertRuleSetting.window_seconds.is_not(None))):
        widest = max(widest, ctx.settings("lateness_p95", workspace_id).window)
    since = ctx.now - widest
    rows = ctx.session.execute(
        select(ActionEvent.at, ScheduledAction.workspace_id, ScheduledAction.publish_at, ScheduledAction.next_attempt_at)
        .join(ScheduledAction, ScheduledAction.id == ActionEvent.action_id)
        .where(ActionEvent.to_status == Status.SUBMITTED.value, ActionEvent.at >= since)
        .order_by(ActionEvent.at.desc()).limit(EVENTS_READ_AT_MOST)
    ).all()
    findings = []

    def check(settings: RuleSettings, chosen, workspace_id=None):
        start = ctx.now - settings.window
        delays = [max((at - (retry_at or publish_at)).total_seconds(), 0.0) for at, ws, publish_at, retry_at in chosen
                  if at >= start]
        if not delays:
            return
        p95 = _p95(delays)
        if p95 > settings.threshold:
            findings.append(Finding("lateness_p95", "lateness", {
                "p95_seconds": round(p95, 1), "claims": len(delays), "threshold_seconds": settings.threshold,
                "window_minutes": round(settings.window.total_seconds() / 60),
            }, workspace_id=workspace_id, title=f"Sends are running {round(p95)} s late (p95)"))

    if instance.enabled:
        check(instance, rows)
    by_workspace = defaultdict(list)
    for row in rows:
        by_workspace[row.workspace_id].append(row)
    for workspace_id, settings in _workspaces(ctx, "lateness_p95", by_workspace).items():
        check(settings, by_workspace[workspace_id], workspace_id)
    return findings


def archive_failing(ctx: Context) -> list[Finding]:
    last = ctx.session.scalars(select(ClockRun).where(ClockRun.kind == "archive")
                               .order_by(ClockRun.started_at.desc(), ClockRun.id.desc()).limit(1)).first()
    if last is None or not last.error:
        return []
    return [Finding("archive_failing", "archive", {
        "started_at": _iso(last.started_at), "error": last.error[:500], "clock_run_id": last.id,
    }, title="The archive job is failing")]


def disk_full(ctx: Context) -> list[Finding]:
    if not ctx.database_path:
        return []
    settings = ctx.settings("disk_full", None)
    folder = Path(ctx.database_path).resolve().parent
    usage = shutil.disk_usage(folder)
    used = 100.0 * (usage.total - usage.free) / usage.total if usage.total else 0.0
    if used <= settings.threshold:
        return []
    size = Path(ctx.database_path).stat().st_size if Path(ctx.database_path).exists() else 0
    return [Finding("disk_full", f"disk:{folder}", {
        "used_percent": round(used, 1), "threshold_percent": settings.threshold, "free_bytes": usage.free,
        "database_bytes": size, "folder": str(folder),
    }, title=f"The database's disk is {round(used)} % full")]


# -- a workspace's rules -----------------------------------------------------------------------


def _channel_names(session: Session, ids) -> dict[int, str]:
    ids = sorted(set(ids))
    if not ids:
        return {}
    return dict(session.execute(select(Channel.id, Channel.name).where(Channel.id.in_(ids))).all())


def _reason(code: str | None, error: str | None) -> str:
    words = (error or "").strip().split("\n", 1)[0][:120]
    return f"{code}: {words}" if code and words else (code or words or "unknown")


def channel_failures(ctx: Context) -> list[Finding]:
    widest = _widest_window(ctx, "channel_failures")
    events = ctx.failed_events(ctx.now - widest)
    findings = []
    for workspace_id, settings in _workspaces(ctx, "channel_failures", (e.workspace_id for e in events)).items():
        start = ctx.now - settings.window
        by_channel = defaultdict(list)
        for event in events:
            if event.workspace_id == workspace_id and event.at >= start:
                by_channel[event.channel_id].append(event)
        names = _channel_names(ctx.session, by_channel)
        for channel_id, failed in sorted(by_channel.items()):
            if len(failed) <= settings.threshold:
                continue
            reasons = Counter(_reason(e.failure_code, e.last_error) for e in failed).most_common(TOP_REASONS)
            findings.append(Finding("channel_failures", f"channel:{channel_id}", {
                "channel_id": channel_id, "channel": names.get(channel_id), "failed": len(failed),
                "threshold": settings.threshold, "window_minutes": round(settings.window.total_seconds() / 60),
                "top_reasons": [{"reason": reason, "count": count} for reason, count in reasons],
                "action_ids": [e.id for e in failed[:ROWS_NAMED]],
            }, workspace_id=workspace_id,
                title=f"Channel {names.get(channel_id)!r} failed {len(failed)} sends"))
    return findings


UNKNOWN_CODES = (FailureCode.OUTCOME_UNKNOWN.value, FailureCode.WORKER_LOST.value)


def outcome_unknown(ctx: Context) -> list[Finding]:
    widest = _widest_window(ctx, "outcome_unknown")
    events = [e for e in ctx.failed_events(ctx.now - widest)
              if e.failure_code in UNKNOWN_CODES and e.status == Status.FAILED.value]
    findings = []
    for workspace_id, settings in _workspaces(ctx, "outcome_unknown", (e.workspace_id for e in events)).items():
        start = ctx.now - settings.window
        rows = sorted({e.id for e in events if e.workspace_id == workspace_id and e.at >= start})
        if len(rows) <= settings.threshold:
            continue
        findings.append(Finding("outcome_unknown", "rows", {
            "rows": len(rows), "action_ids": rows[:ROWS_NAMED], "window_hours": round(settings.window / timedelta(hours=1)),
        }, workspace_id=workspace_id, title=f"{len(rows)} sends may or may not have gone out: a person must decide"))
    return findings


def channel_throttled(ctx: Context) -> list[Finding]:
    holds = ctx.session.execute(
        select(ActionHold.channel_id, Channel.workspace_id, func.count(), func.min(ScheduledAction.publish_at))
        .join(Channel, Channel.id == ActionHold.channel_id)
        .join(ScheduledAction, ScheduledAction.id == ActionHold.action_id)
        .group_by(ActionHold.channel_id, Channel.workspace_id)
    ).all()
    findings = []
    chosen = _workspaces(ctx, "channel_throttled", (ws for _, ws, _, _ in holds))
    names = _channel_names(ctx.session, (channel_id for channel_id, *_ in holds))
    for channel_id, workspace_id, held, oldest in holds:
        settings = chosen.get(workspace_id)
        if settings is None or oldest is None or ctx.now - oldest <= timedelta(minutes=settings.threshold):
            continue
        throttle = ctx.session.get(ChannelThrottle, channel_id)
        findings.append(Finding("channel_throttled", f"channel:{channel_id}", {
            "channel_id": channel_id, "channel": names.get(channel_id), "held_rows": held,
            "oldest_due_at": _iso(oldest), "minutes": round((ctx.now - oldest).total_seconds() / 60, 1),
            "paused_until": _iso(throttle.paused_until) if throttle else None,
            "pause_reason": throttle.pause_reason if throttle else None,
        }, workspace_id=workspace_id, title=f"Channel {names.get(channel_id)!r} is throttled"))
    return findings


def channel_reconnect_needed(ctx: Context) -> list[Finding]:
    """One finding per channel in "reconnect needed", or whose token cannot be renewed and expires within N days.

    This alert is the workspace's notice of it (the bell and the alert destinations): it
    replaces a notification of its own, so a channel's trouble is announced once.
    """
    channels = list(ctx.session.scalars(select(Channel).where(
        Channel.reconnect_needed_since.is_not(None)
        | (Channel.kind.in_(oauth_kinds()) & Channel.token_expires_at.is_not(None)))))
    chosen = _workspaces(ctx, "channel_reconnect_needed", (c.workspace_id for c in channels))
    findings = []
    for channel in sorted(channels, key=lambda c: c.id):
        settings = chosen.get(channel.workspace_id)
        if settings is None:
            continue
        spec = oauth_spec(channel.kind)
        network = network_name(channel.kind, spec)
        figures = {"channel_id": channel.id, "channel": channel.name, "network": network,
                   "account": (channel.connected_account or {}).get("username")
                   or (channel.connected_account or {}).get("name"),
                   "token_expires_at": _iso(channel.token_expires_at)}
        if channel.reconnect_needed_since is not None:
            findings.append(Finding("channel_reconnect_needed", f"channel:{channel.id}", {
                **figures, "since": _iso(channel.reconnect_needed_since), "reason": channel.reconnect_reason,
            }, workspace_id=channel.workspace_id, title=f"Reconnect the {network} channel {channel.name!r}"))
        elif (spec is not None and spec.refresh == NO_REFRESH and channel.token_expires_at is not None
              and channel.token_expires_at - ctx.now <= timedelta(days=settings.threshold)):
            findings.append(Finding("channel_reconnect_needed", f"channel:{channel.id}", {
                **figures, "since": None,
                "reason": f"{network} offers no refresh for this token: reconnect before it expires",
            }, workspace_id=channel.workspace_id,
                title=f"Reconnect the {network} channel {channel.name!r} before its token expires"))
    return findings


def work_auto_paused(ctx: Context) -> list[Finding]:
    rows = ctx.session.execute(
        select(WorkSchedule, Work.name)
        .join(Work, Work.id == WorkSchedule.work_id)
        .where(WorkSchedule.status == ScheduleStatus.PAUSED.value,
               WorkSchedule.failure_count >= WorkSchedule.max_failure_before_pause)
    ).all()
    chosen = _workspaces(ctx, "work_auto_paused", (schedule.workspace_id for schedule, _ in rows))
    return [Finding("work_auto_paused", f"work:{schedule.work_id}", {
        "work_id": schedule.work_id, "work": name, "failures": schedule.failure_count,
        "reason": (schedule.paused_reason or "")[:500],
    }, workspace_id=schedule.workspace_id, title=f"Work {name!r} was paused by its failures")
        for schedule, name in rows if schedule.workspace_id in chosen]


def drip_step_failing(ctx: Context) -> list[Finding]:
    widest = _widest_window(ctx, "drip_step_failing")
    events = [e for e in ctx.failed_events(ctx.now - widest) if e.origin == Origin.DRIP.value and e.thing_id]
    steps = {}
    for event in events:
        parts = event.thing_id.split(":")  # drip:<enrollment>:<step>
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            steps[event.id] = (int(parts[1]), int(parts[2]))
    campaigns = {}
    if steps:
        campaigns = {enrollment_id: campaign_id for enrollment_id, campaign_id in ctx.session.execute(
            select(Enrollment.id, Enrollment.campaign_id).where(
                Enrollment.id.in_(sorted({enrollment for enrollment, _ in steps.values()}))))}
    findings = []
    for workspace_id, settings in _workspaces(ctx, "drip_step_failing", (e.workspace_id for e in events)).items():
        start = ctx.now - settings.window
        counted = Counter()
        for event in events:
            if event.workspace_id == workspace_id and event.at >= start and event.id in steps:
                enrollment, step = steps[event.id]
                if enrollment in campaigns:
                    counted[(campaigns[enrollment], step)] += 1
        for (campaign_id, step), failed in sorted(counted.items()):
            if failed > settings.threshold:
                findings.append(Finding("drip_step_failing", f"campaign:{campaign_id}:step:{step}", {
                    "campaign_id": campaign_id, "step": step, "failed": failed, "threshold": settings.threshold,
                    "window_hours": round(settings.window / timedelta(hours=1)),
                }, workspace_id=workspace_id, title=f"Step {step + 1} of drip campaign #{campaign_id} keeps failing"))
    return findings


def recurring_missing(ctx: Context) -> list[Finding]:
    widest = _widest_window(ctx, "recurring_missing", default=timedelta(days=7))
    events = [e for e in ctx.failed_events(ctx.now - widest)
              if e.origin == Origin.RECURRING.value and e.recurring_schedule_id is not None]
    rules = {(e.workspace_id, e.recurring_schedule_id) for e in events}
    findings = []
    chosen = _workspaces(ctx, "recurring_missing", (ws for ws, _ in rules))
    for workspace_id, rule_id in sorted(rules):
        settings = chosen.get(workspace_id)
        if settings is None:
            continue
        last = ctx.session.execute(
            select(ScheduledAction.id, ScheduledAction.status).where(
                ScheduledAction.recurring_schedule_id == rule_id,
                ScheduledAction.status.in_((Status.PUBLISHED.value, Status.FAILED.value)))
            .order_by(ScheduledAction.publish_at.desc(), ScheduledAction.id.desc()).limit(int(settings.threshold))
        ).all()
        if len(last) >= settings.threshold and all(status == Status.FAILED.value for _, status in last):
            findings.append(Finding("recurring_missing", f"rule:{rule_id}", {
                "rule_id": rule_id, "occurrences": len(last), "action_ids": [row_id for row_id, _ in last],
            }, workspace_id=workspace_id, title=f"Every recent occurrence of recurring rule #{rule_id} failed"))
    return findings


def _widest_window(ctx: Context, rule: str, default: timedelta | None = None) -> timedelta:
    widest = ctx.settings(rule, None).window or default or timedelta(hours=1)
    for workspace_id, in ctx.session.execute(select(AlertRuleSetting.workspace_id).where(
            AlertRuleSetting.rule == rule, AlertRuleSetting.window_seconds.is_not(None))):
        widest = max(widest, ctx.settings(rule, workspace_id).window)
    return widest


def _settings(threshold, window_minutes=None, **extra) -> RuleSettings:
    return RuleSettings(threshold=threshold, window=timedelta(minutes=window_minutes) if window_minutes else None,
                        **extra)


RULES: dict[str, Rule] = {rule.name: rule for rule in (
    Rule("clock_stale", "instance", _settings(5), "A clock job stopped running", clock_stale, unit="minutes",
         covers=lambda ctx, subject: subject in ctx.job_periods),
    Rule("no_consumer", "instance", _settings(2), "No consumer is alive", no_consumer, unit="minutes"),
    Rule("lateness_p95", "both", _settings(60, 10), "Sends are running late", lateness_p95, unit="seconds"),
    Rule("channel_failures", "workspace", _settings(10, 10), "A channel keeps failing", channel_failures,
         unit="sends"),
    Rule("outcome_unknown", "workspace", _settings(0, 24 * 60), "Sends whose outcome is unknown", outcome_unknown,
         unit="rows"),
    Rule("channel_throttled", "workspace", _settings(15), "A channel is throttled", channel_throttled,
         unit="minutes"),
    Rule("channel_reconnect_needed", "workspace", _settings(7), "A channel needs reconnecting",
         channel_reconnect_needed, unit="days"),
    Rule("work_auto_paused", "workspace", _settings(0), "A work was paused by its failures", work_auto_paused),
    Rule("drip_step_failing", "workspace", _settings(3, 24 * 60), "A drip step keeps failing", drip_step_failing,
         unit="sends"),
    Rule("recurring_missing", "workspace", _settings(3), "A recurring rule's occurrences all fail",
         recurring_missing, unit="occurrences"),
    Rule("archive_failing", "instance", _settings(0), "The archive job is failing", archive_failing),
    Rule("disk_full", "instance", _settings(90), "The database's disk is filling up", disk_full, unit="percent"),
)}

# Alerts about the engine itself: also sent directly by each web process, around the queue that may be stuck.
ENGINE_RULES = ("clock_stale", "no_consumer")
WORKSPACE_RULES = tuple(name for name, rule in RULES.items() if rule.scope in ("workspace", "both"))
INSTANCE_RULES = tuple(name for name, rule in RULES.items() if rule.scope in ("instance", "both"))

SETTING_KEYS = ("threshold", "window", "cooldown", "enabled")


def parse_rule_overrides(overrides: dict) -> dict[str, RuleSettings]:
    """The operator's settings (``TICKWORK_ALERT_RULES_JSON``) over the defaults: rule → ``{"threshold": n,
    "window": seconds, "cooldown": seconds, "enabled": bool}``. Raises ValueError naming what is wrong."""
    if not isinstance(overrides, dict):
        raise ValueError("alert rule settings are a JSON object of rule names")
    chosen = {}
    for name, values in overrides.items():
        if name not in RULES:
            raise ValueError(f"unknown alert rule {name!r}; known: {', '.join(RULES)}")
        if not isinstance(values, dict):
            raise ValueError(f"{name}: expected an object such as {{\"threshold\": 10, \"cooldown\": 3600}}")
        chosen[name] = apply_settings(RULES[name].defaults, values, name)
    return chosen


def apply_settings(base: RuleSettings, values: dict, name: str) -> RuleSettings:
    """``base`` with ``values`` applied (seconds for the window and cooldown); ValueError naming a bad one."""
    unknown = set(values) - set(SETTING_KEYS)
    if unknown:
        raise ValueError(f"{name}: unknown setting {sorted(unknown)[0]!r}; known: {', '.join(SETTING_KEYS)}")
    changed = {}
    for key in ("threshold", "window", "cooldown"):
        if key not in values or values[key] is None:
            continue
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}.{key} is a number at least 0, not {value!r}")
        if key == "threshold":
            changed[key] = float(value)
        else:
            if value < 60 or value > 30 * 86400:
                raise ValueError(f"{name}.{key} is from 60 seconds to 30 days, not {value!r}")
            changed[key] = timedelta(seconds=value)
    if "enabled" in values:
        if not isinstance(values["enabled"], bool):
            raise ValueError(f"{name}.enabled is true or false, not {values['enabled']!r}")
        changed["enabled"] = values["enabled"]
    return replace(base, **changed)
