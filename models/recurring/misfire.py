"""A rule's misfire policy, decided at claim time: the dispatch's pre-send check for origin ``recurring``.

An occurrence found more than ``recurring_grace`` (5 minutes) later than it was due (its
``next_attempt_at`` when set, else its ``publish_at``) has missed its time; the rule says
what becomes of it, never a burst of every missed occurrence after an outage:

| misfire     | a missed occurrence                                                  | it becomes                         |
|-------------|----------------------------------------------------------------------|------------------------------------|
| ``skip``    | any                                                                  | failed ``missed_window``, not sent |
| ``fire_once`` | a newer occurrence of the rule is due too (queued, being sent, sent, or tried) | failed ``missed_window``, reason "superseded" |
| ``fire_once`` | the most recent one due                                            | sent, once                         |

The rule's policy replaces its action type's maximum lateness for these rows (the hook
registers with ``decides_lateness``), so the tick's misfire sweep leaves them to this check.
An occurrence on time, or retried by an admin (due again from the retry), is never stopped.
Newer occurrences are found by their slots' keys, one lookup per rule in a chunk.
"""

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.actions.tables import FailureCode, ScheduledAction, Status
from models.core.hooks import Stop
from models.recurring.reading import rows_by_thing, rule_recurrence
from models.recurring.tables import Misfire, RecurringSchedule, slot_thing_id
from models.timing.recurrence import RecurrenceError
from models.timing.wall_time import InvalidTimezone

# The statuses of a newer occurrence that supersedes an older missed one: it went, it is going, or it
# was tried and failed at its provider (a newer one failed as missed did not go, and a person's cancel
# was not a send).
LIVE = (Status.QUEUED.value, Status.SUBMITTED.value, Status.PUBLISHED.value)
MISSED = FailureCode.MISSED_WINDOW.value


def _went_or_goes(row: ScheduledAction) -> bool:
    return row.status in LIVE or (row.status == Status.FAILED.value and row.failure_code != MISSED)


def _late_words(late: timedelta) -> str:
    minutes = int(late.total_seconds() // 60)
    return f"{minutes // 60}h{minutes % 60:02d}m" if minutes >= 60 else f"{minutes}m"


def stop_missed_occurrences(session: Session, rows: list[ScheduledAction], now: datetime, *, grace: timedelta,
                            policy) -> dict[int, Stop]:
    """The rows among ``rows`` (origin ``recurring``) that their rule's misfire policy says must not go."""
    late = [row for row in rows if now - row.due_at > grace]
    if not late:
        return {}
    rule_ids = {row.recurring_schedule_id for row in late if row.recurring_schedule_id is not None}
    rules = {rule.id: rule for rule in session.scalars(
        select(RecurringSchedule).where(RecurringSchedule.id.in_(rule_ids)))} if rule_ids else {}
    zones = dict(session.execute(select(Workspace.id, Workspace.timezone)
                                 .where(Workspace.id.in_({rule.workspace_id for rule in rules.values()}))).all()) \
        if rules else {}
    by_rule: dict[int | None, list[ScheduledAction]] = defaultdict(list)
    for row in late:
        by_rule[row.recurring_schedule_id].append(row)
    stops: dict[int, Stop] = {}
    for rule_id, missed in by_rule.items():
        rule = rules.get(rule_id)
        if rule is None or rule.misfire == Misfire.SKIP.value:
            for row in missed:
                stops[row.id] = Stop(
                    f"missed: {_late_words(now - row.due_at)} late, more than the {_late_words(grace)} grace; "
                    f"rule #{rule_id} skips missed occurrences", failure_code=MISSED)
            continue
        newest = _newest_live_due(session, rule, zones.get(rule.workspace_id), missed, now, policy)
        for row in missed:
            if newest is None:
                stops[row.id] = Stop(f"missed: rule #{rule_id}'s occurrences cannot be read in its workspace's "
                                     "zone, so a late one is not sent", failure_code=MISSED)
            elif newest.publish_at > row.publish_at:
                stops[row.id] = Stop(f"superseded: {_late_words(now - row.due_at)} late, and a newer occurrence "
                                     f"(#{newest.id}) goes instead; rule #{rule_id} fires a missed occurrence once",
                                     failure_code=MISSED)
    return stops


def _newest_live_due(session: Session, rule: RecurringSchedule, zone: str | None, missed: list[ScheduledAction],
                     now: datetime, policy) -> ScheduledAction | None:
    """The rule's newest row, due by ``now``, that went or is going (``missed`` among them); None when
    the rule cannot be read."""
    try:
        recurrence = rule_recurrence(rule, zone, policy)
    except (InvalidTimezone, RecurrenceError):
        return None
    oldest = min(row.publish_at for row in missed)
    things = {slot_thing_id(rule.id, o.slot) for o in recurrence.occurrences_between(oldest, now + timedelta(seconds=1))}
    found = rows_by_thing(session, rule.workspace_id, {rule.action_type}, things) if things else {}
    live = [row for rows in found.values() for row in rows if _went_or_goes(row) and row.publish_at <= now] + missed
    return max(live, key=lambda row: (row.publish_at, row.id), default=None)
