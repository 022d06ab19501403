"""What recurring rules tell the floors below them, registered at start-up (see :mod:`models.core.hooks`)."""

from datetime import date, datetime, time, timedelta

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from models.actions.tables import Origin, ScheduledAction
from models.core.hooks import CalendarEntry, Gauge, Hooks, Stop
from models.core.policy import DEFAULT_POLICY
from models.recurring.misfire import stop_missed_occurrences
from models.recurring.operations import re_expand_after_zone_change
from models.recurring.reading import rule_recurrence
from models.recurring.tables import RecurringSchedule, RuleStatus
from models.timing.recurrence import RecurrenceError
from models.timing.wall_time import InvalidTimezone, resolve_wall_time

# A day of the calendar shows at most this many planned occurrences of one rule (an hourly
# rule would otherwise fill it), then one entry saying how many more.
PLANNED_PER_RULE_AND_DAY = 3
PLANNED_LIMIT = 500


def register(hooks: Hooks) -> None:
    """Put the recurring rules' parts on every hook they answer."""

    def misfire_check(session: Session, rows: list[ScheduledAction], now: datetime) -> dict[int, Stop]:
        policy = hooks.policy or DEFAULT_POLICY
        return stop_missed_occurrences(session, rows, now, grace=policy.recurring_grace, policy=policy)

    hooks.add_pre_send_check(Origin.RECURRING.value, misfire_check, decides_lateness=True)
    hooks.add_gauge(Gauge("tickwork_recurring_rules", "Recurring rules by status, all workspaces", rules_by_status,
                          label="status"))
    hooks.add_calendar_source(lambda session, workspace_id, first, last, zone: planned_entries(
        session, workspace_id, first, last, zone, hooks.policy or DEFAULT_POLICY))
    hooks.add_zone_change("recurring", re_expand_after_zone_change)


def rules_by_status(session: Session, now: datetime) -> dict[str, float]:
    """How many recurring rules there are in each status."""
    counts = {status.value: 0.0 for status in RuleStatus}
    counts.update({status: float(n) for status, n in session.execute(
        select(RecurringSchedule.status, func.count()).group_by(RecurringSchedule.status))})
    return counts


def planned_entries(session: Session, workspace_id: int, first: date, last: date, zone: str,
                    policy=DEFAULT_POLICY) -> list[CalendarEntry]:
    """Active rules' occurrences beyond what the expander has materialized, as lighter "planned" entries.

    What is inside the window shows through its rows; a rule whose zone or definition no
    longer reads shows nothing here (the expander reports it).
    """
    try:
        start = resolve_wall_time(first, time(0), zone).instant
        end = resolve_wall_time(last + timedelta(days=1), time(0), zone).instant
    except (InvalidTimezone, OverflowError):
        return []
    entries: list[CalendarEntry] = []
    rules = session.scalars(select(RecurringSchedule).where(
        RecurringSchedule.workspace_id == workspace_id, text("recurring_schedules.status = 'active'"))
        .order_by(RecurringSchedule.id))
    for rule in rules:
        since = max(start, rule.last_materialized_at or rule.starts_at)
        if since >= end:
            continue
        try:
            occurrences = rule_recurrence(rule, zone, policy).occurrences_between(since, end)
        except (InvalidTimezone, RecurrenceError):
            continue
        per_day: dict[date, int] = {}
        for occurrence in occurrences:
            day = occurrence.local.date()
            per_day[day] = per_day.get(day, 0) + 1
            if per_day[day] <= PLANNED_PER_RULE_AND_DAY:
                entries.append(CalendarEntry(day=day, at=occurrence.local.time().replace(tzinfo=None),
                                             title=f"{rule.action_type} → {rule.target_key}"[:40],
                                             status="planned", kind="rule", ref=rule.id))
        for day, count in per_day.items():
            if count > PLANNED_PER_RULE_AND_DAY:
                entries.append(CalendarEntry(day=day, at=time(23, 59),
                                             title=f"+{count - PLANNED_PER_RULE_AND_DAY} more of rule #{rule.id}",
                                             status="planned", kind="rule", ref=rule.id))
        if len(entries) >= PLANNED_LIMIT:
            break
    return entries[:PLANNED_LIMIT]
