"""The expander: keeps every active rule's next ``recurring_window`` (14 days) of occurrences queued.

It runs hourly (``jobs/periodic.py``), and on one rule whenever a person creates, edits or
resumes it, or changes its workspace's zone, through the same :func:`expand_rule`. Per
occurrence slot in the window (``thing_id = "rule:<id>:<slot>"``):

| the slot's rows                                              | the expander                                         |
|--------------------------------------------------------------|------------------------------------------------------|
| a published, failed or person-cancelled row                  | never mint it again (``skip terminal``)              |
| none active (none at all, or cancelled paused / rescheduled / orphaned) | insert, origin ``recurring`` (its own savepoint) |
| ``submitted``                                                | never touch (``skip in_flight``)                     |
| queued, origin ``person`` (a person rescheduled it)          | leave it (``skip not_ours``)                         |
| queued, ours, at the rule's instant with the rule's payload  | leave it (``unchanged``)                             |
| queued, ours, already due                                    | leave it to the tick and the misfire policy (``skip due``) |
| queued, ours, elsewhere (an edit, a zone change)             | cancel (``rescheduled``) + insert with lineage       |

After an edit or a zone change, the rule's queued future rows whose slot it no longer has
are withdrawn: replaced (``rescheduled``, with lineage) by the new occurrence on the same
local date when there is one, else cancelled ``orphaned``. Above hourly a rule has at most
one occurrence a local date, so a date whose occurrence at the old time went, is being
sent, is due or was moved by a person gets no new slot (daily at 09:00 edited to 10:00 at
09:30 does not send twice that day).

Each rule is expanded in its own short write transaction that reads the rule under its
lock (the row lock on PostgreSQL; SQLite's writer lock is already held) with its
``revision``: a pass that planned on an older revision mints nothing for it, since the edit
expanded the rule itself; a concurrent edit is either fully before or fully after. The
periodic pass first looks at every active rule without a lock (one query for all of them,
then pure time logic) and opens a write transaction only for a rule with something to
write: occurrences past ``last_materialized_at``, or no occurrence left (it runs out and
ends). The slots' rows are read by their keys, so a pass costs what the rules and the
window hold, never the history. Missed passes are caught up from ``last_materialized_at``
(at most one window back); a slot is never minted twice, under overlapping passes and
several consumers, because the dedupe index allows one active row per key and the
terminal-history gate never mints a sent slot again.
"""

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from models.accounts.tables import Workspace
from models.accounts.workspaces import workspace_zone
from models.actions import lifecycle
from models.actions.guard import DuplicateActiveAction, PublishGuardViolation
from models.actions.scheduling import NewAction, insert_action
from models.actions.archived_keys import archived_blocking_keys
from models.actions.tables import ACTIVE_STATUSES, CancelKind, Origin, ScheduledAction, Status, blocks_minting_again
from models.channels.tables import Channel
from models.clock.runs import run_recorded
from models.core.database import read_session, write_session
from models.core.errors import NotFound
from models.core.moves import Actor
from models.core.policy import Policy
from models.core.types import UTCDateTime
from models.recurring import lifecycle as rule_lifecycle
from models.recurring.reading import get_rule, occurrence_payload, rows_by_thing, rule_recurrence
from models.recurring.tables import RecurringSchedule, RuleStatus, slot_thing_id
from models.timing.clock import Clock
from models.timing.recurrence import Frequency, Occurrence, RecurrenceError, RecurrenceRule
from models.timing.wall_time import InvalidTimezone, load_zone

JOB_KIND = "expand"
COUNTS = ("minted", "moved", "withdrawn", "unchanged")
SKIPS = ("terminal", "in_flight", "not_ours", "due", "duplicate")
# The most a wall time's instant moves when a zone changes (UTC-12 to UTC+14), and then some.
ZONE_REACH = timedelta(hours=27)

_t = RecurringSchedule.__table__
ADVANCE_HORIZON = (
    update(_t)
    .where(_t.c.id == bindparam("rule_id"), _t.c.revision == bindparam("seen_revision"),
           (_t.c.last_materialized_at.is_(None)) | (_t.c.last_materialized_at < bindparam("horizon",
                                                                                           type_=UTCDateTime())))
    .values(last_materialized_at=bindparam("horizon", type_=UTCDateTime()))
)


@dataclass
class RuleExpanded:
    """What expanding one rule did: the rows it inserted, and its counts (skips under ``skip_<why>``)."""

    rule: RecurringSchedule
    new_rows: list[ScheduledAction] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)
    ended: bool = False


def window_start(rule: RecurringSchedule, now: datetime, policy: Policy) -> datetime:
    """Where a periodic pass looks from: the horizon already materialized, or one window back at most
    (after an outage longer than the window, older occurrences are not owed)."""
    if rule.last_materialized_at is None:
        return now
    return max(rule.last_materialized_at, now - policy.recurring_window)


def earlier_things(rule: RecurringSchedule, recurrence: RecurrenceRule, now: datetime, *,
                   zone_changed: bool = False) -> set[str]:
    """The slots (as thing ids) the rule's queued future rows may carry from before a change.

    Wall-time slots do not depend on the zone, so the rule's own slots, one zone's reach
    either side of what was materialized, cover them. An hourly rule's slots are instants
    stepped from ``starts_at``; after a zone change ``starts_at`` still holds the old
    zone's instant, so its steps are the old slots.
    """
    end = max(rule.last_materialized_at or now, now)
    if recurrence.frequency is Frequency.HOURLY:
        if not zone_changed:
            return {slot_thing_id(rule.id, o.slot) for o in recurrence.occurrences_between(now, end + ZONE_REACH)}
        step = timedelta(hours=recurrence.interval)
        first = max(0, -((rule.starts_at - now) // step))
        things, instant = set(), rule.starts_at + first * step
        while instant <= end:
            things.add(slot_thing_id(rule.id, instant.replace(tzinfo=None).isoformat(timespec="minutes") + "Z"))
            instant += step
        return things
    return {slot_thing_id(rule.id, o.slot)
            for o in recurrence.occurrences_between(now - ZONE_REACH, end + ZONE_REACH)}


def _same(row: ScheduledAction, rule: RecurringSchedule, occurrence: Occurrence, payload: dict) -> bool:
    return (row.publish_at, row.payload, row.channel_id, row.target_key, row.action_type) == (
        occurrence.instant, payload, rule.channel_id, rule.target_key, rule.action_type)


def expand_rule(
    session: Session,
    rule: RecurringSchedule,
    *,
    now: datetime,
    policy: Policy,
    actor: Actor,
    since: datetime | None = None,
    earlier: set[str] = frozenset(),
    earlier_types: set[str] = frozenset(),
    recurrence: RecurrenceRule | None = None,
) -> RuleExpanded:
    """Materialize ``rule``'s occurrences from ``since`` (default :func:`window_start`) to now + the window.

    Inside the caller's write transaction; the caller read ``rule`` under its lock. ``earlier``
    are thing ids (of action types ``earlier_types`` besides the rule's own) its rows may carry
    from before an edit or a zone change: those of its queued future rows whose slot the rule
    no longer has are withdrawn. Raises InvalidTimezone when the workspace's zone is broken and
    RecurrenceError when the stored rule no longer passes.
    """
    done = RuleExpanded(rule)
    if recurrence is None:
        recurrence = rule_recurrence(rule, workspace_zone(session, rule.workspace_id), policy)
    horizon = now + policy.recurring_window
    start = window_start(rule, now, policy) if since is None else since
    occurrences = recurrence.occurrences_between(start, horizon) if start < horizon else []
    wanted = {slot_thing_id(rule.id, o.slot): o for o in occurrences}
    things = set(wanted) | set(earlier)
    found = rows_by_thing(session, rule.workspace_id, {rule.action_type} | set(earlier_types), things) if things else {}
    channel = session.get(Channel, rule.channel_id)
    payloads = {thing: occurrence_payload(rule, occurrence) for thing, occurrence in wanted.items()}

    # Slots whose terminal history retention archived: gated as if their rows were still here.
    archived = {thing for thing, _ in archived_blocking_keys(session, rule.workspace_id, {rule.action_type},
                                                             set(wanted))}
    inserts: dict[str, Occurrence] = {}
    moves: list[tuple[ScheduledAction, str]] = []
    for thing, occurrence in wanted.items():
        rows = found.get(thing, [])
        if thing in archived or any(blocks_minting_again(row) for row in rows):
            done.counts["skip_terminal"] += 1
            continue
        active = [row for row in rows if row.status in ACTIVE_STATUSES]
        if not active:
            inserts[thing] = occurrence
            continue
        row = active[-1]
        if row.status == Status.SUBMITTED.value:
            done.counts["skip_in_flight"] += 1
        elif row.origin != Origin.RECURRING.value:
            done.counts["skip_not_ours"] += 1
        elif _same(row, rule, occurrence, payloads[thing]):
            done.counts["unchanged"] += 1
        elif row.publish_at <= now:
            done.counts["skip_due"] += 1
        else:
            moves.append((row, thing))
    earlier_rows = [row for thing, rows in found.items() if thing not in wanted for row in rows]
    withdrawals = [row for row in earlier_rows if _withdrawable(row, rule, now)]
    # Above hourly, a rule has at most one occurrence a local date, so an earlier slot on a date
    # is that date's occurrence at its old time: if it went, is going, or a person moved it, the
    # date's new slot is not minted; if it is still queued, the new slot replaces it.
    by_date: dict[str, list[str]] = {}
    if recurrence.frequency is not Frequency.HOURLY:
        earlier_by_date: dict[str, list[ScheduledAction]] = {}
        for row in earlier_rows:
            earlier_by_date.setdefault(_slot_date(row.thing_id), []).append(row)
        for thing in list(inserts):
            day = inserts[thing].slot[:10]
            taken = _date_taken(earlier_by_date.get(day, []), rule, now)
            if taken:
                done.counts[f"skip_{taken}"] += 1
                del inserts[thing]
            else:
                by_date.setdefault(day, []).append(thing)

    def mint(thing: str, predecessor: ScheduledAction | None) -> bool:
        occurrence = wanted[thing]
        new = NewAction(action_type=rule.action_type, channel=channel, target_key=rule.target_key,
                        payload=payloads[thing], publish_at=occurrence.instant, thing_id=thing)
        why = f"rule #{rule.id} {occurrence.slot}" + (f", replacing #{predecessor.id}" if predecessor else "")
        try:
            row = insert_action(session, rule.workspace_id, new, now=now, actor=actor, origin=Origin.RECURRING,
                                rescheduled_from_id=predecessor.id if predecessor else None,
                                recurring_schedule_id=rule.id, reason=why, created_by_id=rule.created_by_id)
        except DuplicateActiveAction:
            done.counts["skip_duplicate"] += 1  # another pass minted it between our read and our insert
            return False
        except PublishGuardViolation:
            done.counts["skip_terminal"] += 1
            return False
        done.new_rows.append(row)
        return True

    def replace(old: ScheduledAction, thing: str, why: str) -> bool:
        """Cancel ``old`` (``rescheduled``) and mint ``thing`` pointing back to it, together or not at all."""
        savepoint = session.begin_nested()
        cancelled = lifecycle.cancel(session, old.id, kind=CancelKind.RESCHEDULED, now=now, actor=actor,
                                     workspace_id=rule.workspace_id, reason=why)
        if not cancelled.ok:
            savepoint.rollback()
            done.counts["skip_in_flight"] += 1  # claimed between our read and our cancel
            return False
        if mint(thing, old):
            savepoint.commit()
            return True
        savepoint.rollback()  # keep the old row rather than leave the slot with none
        return False

    for old, thing in moves:
        if replace(old, thing, f"rule #{rule.id} now at {wanted[thing].instant.isoformat()}"):
            done.counts["moved"] += 1
    for old in sorted(withdrawals, key=lambda row: (row.publish_at, row.id)):
        partners = by_date.get(_slot_date(old.thing_id), [])
        if partners and replace(old, partners[0], f"rule #{rule.id} edited: {wanted[partners[0]].slot} instead"):
            inserts.pop(partners.pop(0))
            done.counts["moved"] += 1
            continue
        withdrawn = lifecycle.cancel(session, old.id, kind=CancelKind.ORPHANED, now=now, actor=actor,
                                     workspace_id=rule.workspace_id,
                                     reason=f"rule #{rule.id} no longer has this occurrence")
        done.counts["withdrawn" if withdrawn.ok else "skip_in_flight"] += 1
    for thing in inserts:
        if mint(thing, None):
            done.counts["minted"] += 1

    session.execute(ADVANCE_HORIZON, {"rule_id": rule.id, "seen_revision": rule.revision, "horizon": horizon})
    if rule.status == RuleStatus.ACTIVE.value and not recurrence.has_occurrence_after(now):
        done.ended = rule_lifecycle.run_out(session, rule, now=now, actor=actor).ok
    return done


def _withdrawable(row: ScheduledAction, rule: RecurringSchedule, now: datetime) -> bool:
    """One of the rule's own rows still waiting for a later time: an edit or a zone change may move it."""
    return (row.status == Status.QUEUED.value and row.origin == Origin.RECURRING.value
            and row.recurring_schedule_id == rule.id and row.publish_at > now)


def _date_taken(rows: list[ScheduledAction], rule: RecurringSchedule, now: datetime) -> str | None:
    """Why a date's earlier occurrence keeps its new slot from being minted (a skip's name), or None."""
    for row in rows:
        if blocks_minting_again(row):
            return "terminal"
        if row.status == Status.SUBMITTED.value:
            return "in_flight"
        if row.status == Status.QUEUED.value and not _withdrawable(row, rule, now):
            return "due" if row.origin == Origin.RECURRING.value else "not_ours"
    return None


def _slot_date(thing_id: str) -> str:
    """The local date (or, hourly, the UTC date) of a slot's thing id: ``rule:7:2026-12-01T09:00`` → ``2026-12-01``."""
    return thing_id.split(":", 2)[-1][:10]


def rows_of_slots(session: Session, rule: RecurringSchedule, recurrence: RecurrenceRule, start: datetime,
                  end: datetime) -> list[ScheduledAction]:
    """The rows (any status) of the rule's slots whose occurrence falls in ``[start, end]``, one zone's reach wider."""
    things = {slot_thing_id(rule.id, o.slot)
              for o in recurrence.occurrences_between(start - ZONE_REACH, end + ZONE_REACH)}
    return [row for rows in rows_by_thing(session, rule.workspace_id, {rule.action_type}, things).values()
            for row in rows]


def cancel_future_rows(session: Session, rule: RecurringSchedule, recurrence: RecurrenceRule, *, now: datetime,
                       actor: Actor, kind: CancelKind, reason: str) -> int:
    """Cancel the rule's own queued rows due after ``now`` (a person's rows stay); returns how many."""
    end = max(rule.last_materialized_at or now, now)
    cancelled = 0
    for row in rows_of_slots(session, rule, recurrence, now, end):
        if (row.status == Status.QUEUED.value and row.origin == Origin.RECURRING.value
                and row.recurring_schedule_id == rule.id and row.publish_at > now):
            cancelled += lifecycle.cancel(session, row.id, kind=kind, now=now, actor=actor,
                                          workspace_id=rule.workspace_id, reason=reason).ok
    return cancelled


# -- the periodic pass ----------------------------------------------------------------------


@dataclass(frozen=True)
class PlannedRule:
    """An active rule as the pass saw it before any lock: its id, revision and definition."""

    rule: RecurringSchedule
    zone: str
    workspace: str


def plan_pass(session: Session) -> list[PlannedRule]:
    """Every active rule with its workspace's zone, in one query each (the active rules' partial index)."""
    # A literal predicate, so SQLite recognises its partial index.
    rules = list(session.scalars(select(RecurringSchedule).where(text("recurring_schedules.status = 'active'"))
                                 .order_by(RecurringSchedule.workspace_id, RecurringSchedule.id)))
    if not rules:
        return []
    zones = {ident: (name, zone) for ident, name, zone in session.execute(
        select(Workspace.id, Workspace.name, Workspace.timezone)
        .where(Workspace.id.in_({rule.workspace_id for rule in rules})))}
    for rule in rules:
        session.expunge(rule)
    return [PlannedRule(rule, zones[rule.workspace_id][1], zones[rule.workspace_id][0]) for rule in rules]


def empty_summary() -> dict:
    summary = {key: 0 for key in COUNTS}
    summary.update(rules_seen=0, rules_written=0, rules_ended=0, rules_stale=0, rules_skipped=0,
                   skipped={key: 0 for key in SKIPS}, errors=[])
    return summary


def _add(summary: dict, counts: Counter) -> None:
    for key, count in counts.items():
        if key.startswith("skip_"):
            summary["skipped"][key[5:]] = summary["skipped"].get(key[5:], 0) + count
        else:
            summary[key] = summary.get(key, 0) + count


def needs_writing(planned: PlannedRule, recurrence: RecurrenceRule, now: datetime, policy: Policy) -> bool:
    """Whether the rule has occurrences past what was materialized, or none left at all (it runs out)."""
    rule = planned.rule
    horizon = now + policy.recurring_window
    start = window_start(rule, now, policy)
    if rule.last_materialized_at is None or (start < horizon and recurrence.occurrences_between(start, horizon)):
        return True
    return not recurrence.has_occurrence_after(now)


def expand_rules(
    plan: list[PlannedRule],
    *,
    engine: Engine | None = None,
    clock: Clock,
    policy: Policy,
    actor: Actor,
    announce: Callable[[list[ScheduledAction]], None] | None = None,
) -> dict:
    """Expand each planned rule that needs it, each in its own write transaction; returns the summary.

    A rule whose workspace zone is broken, or which no longer reads, is skipped with its
    error in ``errors``; the others go on. ``announce`` is given each rule's new rows once
    they are committed.
    """
    summary = empty_summary()
    broken_zones: dict[str, str] = {}
    for planned in plan:
        summary["rules_seen"] += 1
        rule = planned.rule
        try:
            if planned.zone not in broken_zones:
                load_zone(planned.zone)
            recurrence = rule_recurrence(rule, planned.zone, policy)
        except InvalidTimezone as exc:
            broken_zones[planned.zone] = str(exc)
            _skip(summary, planned, f"the workspace's time zone is not valid: {exc}")
            continue
        except RecurrenceError as exc:
            _skip(summary, planned, f"{exc.part}: {exc.message}")
            continue
        if not needs_writing(planned, recurrence, clock.now(), policy):
            continue
        try:
            with write_session(engine) as session:
                now = clock.now()
                current = get_rule(session, rule.workspace_id, rule.id, lock=True)
                if current.revision != rule.revision or current.status != RuleStatus.ACTIVE.value:
                    summary["rules_stale"] += 1  # edited, paused or ended since the plan: that change expanded it
                    continue
                zone = workspace_zone(session, rule.workspace_id)
                if zone != planned.zone:  # the zone changed since the plan: read the rule in the new one
                    recurrence = rule_recurrence(current, zone, policy)
                done = expand_rule(session, current, now=now, policy=policy, actor=actor, recurrence=recurrence)
        except NotFound:
            continue
        except InvalidTimezone as exc:  # the zone broke during the pass
            _skip(summary, planned, f"the workspace's time zone is not valid: {exc}")
            continue
        except RecurrenceError as exc:
            _skip(summary, planned, f"{exc.part}: {exc.message}")
            continue
        summary["rules_written"] += 1
        summary["rules_ended"] += done.ended
        _add(summary, done.counts)
        if announce and done.new_rows:
            announce(done.new_rows)
    return summary


def _skip(summary: dict, planned: PlannedRule, error: str) -> None:
    summary["rules_skipped"] += 1
    summary["errors"].append({"rule_id": planned.rule.id, "workspace_id": planned.rule.workspace_id,
                              "workspace": planned.workspace, "error": error})


def run_expander(
    *,
    engine: Engine | None = None,
    clock: Clock,
    policy: Policy,
    announce: Callable[[list[ScheduledAction]], None] | None = None,
) -> dict:
    """One whole expander pass, recorded as an ``expand`` clock run; returns its summary.

    Safe to run in several processes at once: every write is decided under the rule's
    lock, and every row is a per-row insert the dedupe index and the publish guard back up.
    """

    def one_pass(clock_run_id: int) -> dict:
        with read_session(engine) as session:
            plan = plan_pass(session)
        return expand_rules(plan, engine=engine, clock=clock, policy=policy,
                            actor=Actor.job(JOB_KIND, clock_run_id), announce=announce)

    return run_recorded(JOB_KIND, one_pass, clock=clock, engine=engine)
