"""Reading recurring rules: one rule, a page of them, their occurrences, their payloads, their rows.

A rule's rows are found by the keys they carry (``thing_id = "rule:<id>:<slot>"``), one
indexed lookup per set of slots, so reading a rule never scans the history: the slots come
from the rule itself (the next and the last occurrences), and its Run Nows from its events.
"""

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment
from sqlalchemy import select
from sqlalchemy.orm import Session

from models.actions.tables import ScheduledAction
from models.core.errors import NotFound
from models.core.policy import Policy
from models.recurring.tables import MAX_ID, RecurringSchedule, RecurringScheduleEvent, RuleStatus, slot_thing_id
from models.timing.recurrence import Occurrence, RecurrenceRule, parse_recurrence

JUST_BEFORE = timedelta(microseconds=1)

# -- the rule as the time logic reads it -----------------------------------------------------


def exdate_values(stored: list[str]) -> list[date | datetime]:
    """Skipped dates as stored (``2026-12-25`` or ``2026-12-25T09:00``) as dates and naive wall datetimes."""
    return [datetime.fromisoformat(text) if "T" in text else date.fromisoformat(text) for text in stored or []]


def rule_recurrence(rule: RecurringSchedule, zone: str, policy: Policy) -> RecurrenceRule:
    """The rule's occurrences in ``zone`` (raises InvalidTimezone, or RecurrenceError when a rule
    stored earlier no longer passes, say because ``recurring_max_per_day`` was lowered)."""
    return parse_recurrence(rule.rrule, starts_local=rule.starts_local, zone=zone, ends_local=rule.ends_local,
                            exdates_local=exdate_values(rule.exdates_local),
                            max_per_day=policy.recurring_max_per_day)


# -- payloads --------------------------------------------------------------------------------

# What an occurrence fills in; anything else in a payload is copied as it is (a provider's own
# {{ placeholders }} included). Each is rendered by Jinja's sandbox from a fixed template.
PLACEHOLDERS = ("local_date", "local_time")
PLACEHOLDER = re.compile(r"\{\{\s*occurrence\s*\.\s*(local_date|local_time)\s*\}\}")
MENTION = re.compile(r"\{\{(?:(?!\}\}).)*?\boccurrence\b(?:(?!\}\}).)*?\}\}", re.DOTALL)
_SANDBOX = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False)
_RENDER = {name: _SANDBOX.from_string("{{ occurrence.%s }}" % name) for name in PLACEHOLDERS}


def occurrence_values(local: datetime) -> dict[str, str]:
    """What an occurrence fills in, from the wall time it goes out at."""
    return {"local_date": local.date().isoformat(), "local_time": local.strftime("%H:%M")}


def render_payload(template, values: dict[str, str]):
    """``template`` with every ``{{ occurrence.local_date }}`` and ``{{ occurrence.local_time }}`` in its
    strings (at any depth) filled in; everything else as it is."""
    if isinstance(template, str):
        if "occurrence" not in template:
            return template
        return PLACEHOLDER.sub(lambda match: _RENDER[match.group(1)].render(occurrence=values), template)
    if isinstance(template, dict):
        return {key: render_payload(value, values) for key, value in template.items()}
    if isinstance(template, list):
        return [render_payload(value, values) for value in template]
    return template


def occurrence_payload(rule: RecurringSchedule, occurrence: Occurrence) -> dict:
    """What the row minted for ``occurrence`` carries to its provider."""
    return render_payload(rule.payload, occurrence_values(occurrence.local))


# -- rules -----------------------------------------------------------------------------------


def get_rule(session: Session, workspace_id: int, rule_id: int, *, lock: bool = False) -> RecurringSchedule:
    """The rule, or :class:`NotFound`. ``lock`` takes its row lock (PostgreSQL; SQLite's writer lock is
    already held by a write transaction) and re-reads it, so a decision made on it rests on its latest
    committed version."""
    if not 0 < rule_id <= MAX_ID:
        raise NotFound(f"no recurring rule #{rule_id} in this workspace")
    query = select(RecurringSchedule).where(RecurringSchedule.id == rule_id,
                                            RecurringSchedule.workspace_id == workspace_id)
    if lock:
        query = query.with_for_update().execution_options(populate_existing=True)
    rule = session.scalar(query)
    if rule is None:
        raise NotFound(f"no recurring rule #{rule_id} in this workspace")
    return rule


def list_rules(session: Session, workspace_id: int, *, statuses: list[str] | None = None,
               after_id: int | None = None, limit: int = 50) -> list[RecurringSchedule]:
    """A page of the workspace's rules, by id."""
    query = select(RecurringSchedule).where(RecurringSchedule.workspace_id == workspace_id)
    if statuses:
        query = query.where(RecurringSchedule.status.in_(statuses))
    if after_id is not None:
        query = query.where(RecurringSchedule.id > after_id)
    return list(session.scalars(query.order_by(RecurringSchedule.id).limit(limit)))


def rule_events(session: Session, rule_id: int) -> list[RecurringScheduleEvent]:
    """A rule's history, oldest first."""
    return list(session.scalars(select(RecurringScheduleEvent).where(RecurringScheduleEvent.schedule_id == rule_id)
                                .order_by(RecurringScheduleEvent.id)))


# -- rows ------------------------------------------------------------------------------------


def rows_by_thing(session: Session, workspace_id: int, action_types, thing_ids) -> dict[str, list[ScheduledAction]]:
    """Every row (any status, any origin) carrying one of ``thing_ids``, by thing id, oldest first.

    One lookup on the ``(workspace_id, action_type, thing_id, ...)`` index per batch of ids:
    its cost follows the slots asked about, never the history.
    """
    ids = sorted(set(thing_ids))
    found: dict[str, list[ScheduledAction]] = {}
    for start in range(0, len(ids), 500):
        for row in session.scalars(
            select(ScheduledAction)
            .where(ScheduledAction.workspace_id == workspace_id,
                   ScheduledAction.action_type.in_(sorted(set(action_types))),
                   ScheduledAction.thing_id.in_(ids[start:start + 500]))
            .order_by(ScheduledAction.id)
        ):
            found.setdefault(row.thing_id, []).append(row)
    return found


@dataclass(frozen=True)
class OccurrenceRows:
    """One occurrence of a rule and the rows minted for its slot (a person's reschedule included)."""

    occurrence: Occurrence
    rows: list[ScheduledAction] = field(default_factory=list)

    @property
    def latest(self) -> ScheduledAction | None:
        return self.rows[-1] if self.rows else None


@dataclass(frozen=True)
class RuleOverview:
    """What a rule's page shows: its next and last occurrences with their rows, its Run Nows."""

    upcoming: list[OccurrenceRows]
    past: list[OccurrenceRows]
    manual: list[ScheduledAction]


def rule_overview(session: Session, rule: RecurringSchedule, recurrence: RecurrenceRule | None, *, now: datetime,
                  upcoming: int = 10, past: int = 10) -> RuleOverview:
    """The next ``upcoming`` occurrences (none once the rule ended) and the last ``past``, with their rows.

    ``recurrence`` is None when the rule cannot be read in its workspace's zone: then only its Run Nows show.
    """
    coming = [] if recurrence is None or rule.status == RuleStatus.ENDED.value else \
        recurrence.next_occurrences(now - JUST_BEFORE, upcoming)  # one exactly now is still to come
    gone = [] if recurrence is None else recurrence.last_occurrences(now, past)
    manual_ids = [event.action_id for event in rule_events(session, rule.id) if event.action_id is not None]
    things = {slot_thing_id(rule.id, o.slot) for o in coming + gone}
    rows = rows_by_thing(session, rule.workspace_id, {rule.action_type}, things) if things else {}
    manual = list(session.scalars(select(ScheduledAction).where(ScheduledAction.id.in_(manual_ids))
                                  .order_by(ScheduledAction.id))) if manual_ids else []
    return RuleOverview(
        upcoming=[OccurrenceRows(o, rows.get(slot_thing_id(rule.id, o.slot), [])) for o in coming],
        past=[OccurrenceRows(o, rows.get(slot_thing_id(rule.id, o.slot), [])) for o in reversed(gone)],
        manual=manual,
    )


def local_wall(value: datetime | None) -> str | None:
    """A stored wall time as the API and the forms write it, ``2026-12-01T09:00``."""
    return value.strftime("%Y-%m-%dT%H:%M") if value is not None else None
