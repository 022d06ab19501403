"""What people do to works, called by both shells: create and delete a work, PUT and DELETE its
schedule, Run Now, and change a workspace's plan.

Every check lives here (or in the modules it calls): who may (:mod:`models.works.access`),
what a cadence, a billing mode, a failure threshold and provider overrides must be, whether
the plan allows the cadence, whether a pipeline can run without ``TICKWORK_BASE_URL``. A
refusal is a typed error naming the field, and the caller's transaction has changed
nothing. Status changes go through :mod:`models.works.lifecycle` and
:mod:`models.works.generation`.

PUT (FR-1, issue 12 item 5): it creates or updates; omitted fields keep their values (a new
schedule needs a ``cadence``; ``enable`` defaults to true, ``billingMode`` to
``subscription``, ``maxFailureBeforePause`` to 3). ``enable: true`` → active, ``enable: false``
→ paused. ``providerOverrides`` replaces the whole map.

Where the slots sit (issue 22, item 1):
- A newly enabled schedule (created, or enabled after a DELETE) lays its grid by
  :func:`~models.timing.cadence.first_grid`: one cadence after the work's last successful
  generation (its slot, else its start), or after now when it was never generated; a first
  slot already past is due at the dispatcher's next pass.
- ``weekday`` (weekly), ``dayOfMonth`` (monthly) and ``time`` (``HH:MM``, daily, weekly and
  monthly) name the grid instead (:func:`~models.timing.cadence.named_grid`); what is not
  named comes from the rule's first slot.
- A paused schedule keeps its grid: re-enabling sets nextRunAt to the grid's next slot after
  now (missed slots are not caught up) and failureCount back to 0. Only a new cadence, or
  a named day or time, lays a new grid; saving otherwise keeps nextRunAt.
- ``overlapPolicy`` is ``skip`` (the default) or ``buffer_one``: what a slot does when it
  comes due while the work's last generation still runs (:mod:`models.works.dispatcher`).
- ``dry_run`` answers the schedule as the PUT would leave it and changes nothing (the shells
  roll the transaction back), so a person sees the next run before saving.
"""

import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, time

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.accounts.tables import Role, Workspace
from models.core.errors import Conflict, InvalidInput, NotFound
from models.core.moves import Actor
from models.timing.cadence import (
    WEEKDAYS,
    Cadence,
    CadenceError,
    first_grid,
    named_grid,
    next_slot,
    parse_cadence,
    slot_at_or_before,
)
from models.timing.wall_time import InvalidTimezone
from models.works import generation, lifecycle
from models.works.access import check_may_edit_works
from models.works.context import WorksContext
from models.works.notify import notify
from models.works.pipelines.webhook_pipeline import BaseUrlMissing
from models.works.plugins import check_overrides, find_plugin
from models.works.reading import get_work, grid_of, last_generation_at, schedule_of
from models.works.runs import chosen_providers, start_run
from models.works.tables import (
    MAX_FAILURES_BEFORE_PAUSE,
    BillingMode,
    OverlapPolicy,
    RunKind,
    ScheduleStatus,
    Work,
    WorkRun,
    WorkSchedule,
)

UNSET = object()
MAX_SETTINGS_KEYS = 20
DEFAULT_MAX_FAILURES = 3


@dataclass
class WorkChange:
    """A work (and its schedule) after an operation, runs to hand to the works queue, actions to announce."""

    work: Work
    schedule: WorkSchedule | None = None
    runs: list[WorkRun] = field(default_factory=list)
    actions: list = field(default_factory=list)
    secret: str | None = None  # shown once, when a work is created
    note: str | None = None


# -- checks -----------------------------------------------------------------------------------


def check_name(name) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput("name is required: 1 to 100 characters", field="name", code="missing")
    name = name.strip()
    if len(name) > 100 or "\x00" in name:
        raise InvalidInput("name is 1 to 100 characters", field="name", code="too_long")
    return name


def check_pipeline(pipeline_id, settings, *, base_url: str | None, registry=None,
                   field_name: str = "pipeline") -> tuple[str, dict]:
    """An installed pipeline plugin and its settings, checked by the plugin itself."""
    plugin = find_plugin(pipeline_id, "pipeline", field=field_name, registry=registry)
    if settings is None:
        settings = {}
    if not isinstance(settings, dict) or len(settings) > MAX_SETTINGS_KEYS:
        raise InvalidInput(f"settings must be an object of at most {MAX_SETTINGS_KEYS} keys", field="settings",
                           code="wrong_type")
    check = getattr(plugin.target, "check_settings", None)
    if check is None:
        return plugin.id, dict(settings)
    try:
        return plugin.id, dict(check(dict(settings), base_url))
    except BaseUrlMissing as exc:
        raise InvalidInput(str(exc), field=field_name, code="base_url_missing") from None
    except ValueError as exc:
        message = str(exc)
        named = message.split(":", 1)[0] if message.startswith("settings.") else "settings"
        raise InvalidInput(message, field=named, code="bad_setting") from None


def _check_ready_to_run(work: Work, schedule: WorkSchedule | None, context: WorksContext) -> None:
    """A pipeline that needs the public address (webhook) refuses to activate without it."""
    pipeline, _ = chosen_providers(work, schedule)
    field_name = "providerOverrides.pipeline" if pipeline != work.pipeline else "pipeline"
    if pipeline == "webhook" and not context.base_url:
        raise InvalidInput("the webhook pipeline needs TICKWORK_BASE_URL (the public address its callback is sent "
                           "to); set it and try again", field=field_name, code="base_url_missing")


def check_enable(value) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput("enable must be true or false", field="enable", code="wrong_type")
    return value


def check_cadence(value) -> Cadence:
    try:
        return parse_cadence(value)
    except CadenceError as exc:
        raise InvalidInput(str(exc), field="cadence", code="bad_cadence") from None


def check_billing_mode(value) -> str:
    if value not in [mode.value for mode in BillingMode]:
        raise InvalidInput(f"billingMode must be one of {', '.join(mode.value for mode in BillingMode)}",
                           field="billingMode", code="bad_billing_mode")
    return value


def check_overlap_policy(value) -> str:
    if value not in [policy.value for policy in OverlapPolicy]:
        raise InvalidInput(f"overlapPolicy must be one of {', '.join(policy.value for policy in OverlapPolicy)}",
                           field="overlapPolicy", code="bad_overlap_policy")
    return value


def check_max_failures(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_FAILURES_BEFORE_PAUSE:
        raise InvalidInput(f"maxFailureBeforePause must be a whole number from 1 to {MAX_FAILURES_BEFORE_PAUSE}",
                           field="maxFailureBeforePause", code="out_of_range")
    return value


@dataclass(frozen=True)
class NamedSlot:
    """The parts of a calendar grid a person named: a weekday (0 = Monday), a day of month, a wall time."""

    weekday: int | None = None
    day_of_month: int | None = None
    wall_time: time | None = None

    def __bool__(self) -> bool:
        return any(part is not None for part in (self.weekday, self.day_of_month, self.wall_time))


_HH_MM = re.compile(r"([01][0-9]|2[0-3]):([0-5][0-9])")


def check_named_slot(cadence: Cadence, weekday=UNSET, day_of_month=UNSET, wall_time=UNSET) -> NamedSlot:
    """The day and wall time a weekly or monthly (or daily: time only) schedule names; each refusal names its field."""
    named = {}
    if weekday is not UNSET and weekday is not None:
        if cadence is not Cadence.WEEKLY:
            raise InvalidInput("weekday names the day of a weekly schedule", field="weekday", code="not_weekly")
        if weekday not in WEEKDAYS:
            raise InvalidInput(f"weekday is one of {', '.join(WEEKDAYS)}", field="weekday", code="bad_weekday")
        named["weekday"] = WEEKDAYS.index(weekday)
    if day_of_month is not UNSET and day_of_month is not None:
        if cadence is not Cadence.MONTHLY:
            raise InvalidInput("dayOfMonth names the day of a monthly schedule", field="dayOfMonth",
                               code="not_monthly")
        if isinstance(day_of_month, bool) or not isinstance(day_of_month, int) or not 1 <= day_of_month <= 31:
            raise InvalidInput("dayOfMonth is a whole number from 1 to 31 (29 to 31 run on the last day of "
                               "shorter months)", field="dayOfMonth", code="out_of_range")
        named["day_of_month"] = day_of_month
    if wall_time is not UNSET and wall_time is not None:
        if cadence.is_elapsed:
            raise InvalidInput(f"a {cadence.value} schedule steps in elapsed time and names no wall time",
                               field="time", code="not_calendar")
        match = _HH_MM.fullmatch(wall_time) if isinstance(wall_time, str) else None
        if match is None:
            raise InvalidInput("time is a wall time HH:MM in the workspace's zone, such as 09:00", field="time",
                               code="bad_time")
        named["wall_time"] = time(int(match[1]), int(match[2]))
    return NamedSlot(**named)


def _zone_of(session: Session, workspace_id: int) -> tuple[Workspace, str]:
    workspace = session.get(Workspace, workspace_id)
    return workspace, workspace.timezone


def _bad_zone(exc: InvalidTimezone) -> InvalidInput:
    return InvalidInput(f"the workspace's time zone is not valid: {exc}", field="timezone", code="bad_zone")


def _new_grid(session: Session, work: Work, cadence: Cadence, named: NamedSlot, *, now: datetime, zone: str,
              context: WorksContext, current: WorkSchedule | None = None):
    """The grid laid now (the module docstring's rules), and its first slot; a broken zone is a 422, not a crash."""
    try:
        grid, first = first_grid(cadence, last_generation=last_generation_at(session, work.id), now=now, zone=zone,
                                 dispatch_interval=context.policy.work_dispatch_interval)
        if not named:
            return grid, first
        # What is not named comes from the schedule's own grid when its cadence stays, else from the
        # rule's anchor: its weekday, its day of month (a 31st clamps and returns), its wall time.
        default_wall = (current.anchor_local_naive if current is not None and current.cadence == cadence.value
                        else grid.anchor_local)
        grid = named_grid(cadence, now=now, zone=zone, default_wall=default_wall, weekday=named.weekday,
                          day_of_month=named.day_of_month, wall_time=named.wall_time)
        return grid, next_slot(grid, now, zone)
    except InvalidTimezone as exc:
        raise _bad_zone(exc) from None


def _kept_grid_slot(schedule: WorkSchedule, *, now: datetime, zone: str) -> datetime:
    """A paused schedule re-enabled: its own grid's next slot after now (missed slots are not caught up)."""
    try:
        return next_slot(grid_of(schedule), now, zone)
    except InvalidTimezone as exc:
        raise _bad_zone(exc) from None


# -- works ------------------------------------------------------------------------------------


def create_work(session: Session, workspace_id: int, *, name, pipeline, settings, actor: Actor, role: Role,
                now: datetime, context: WorksContext) -> WorkChange:
    """A new work running ``pipeline`` with its ``settings``; its signing secret is returned once."""
    check_may_edit_works(role)
    name = check_name(name)
    pipeline, settings = check_pipeline(pipeline, settings, base_url=context.base_url)
    secret = secrets.token_urlsafe(32)
    work = Work(workspace_id=workspace_id, created_by_id=actor.user_id, name=name, pipeline=pipeline,
                settings=settings, generation_status="idle", created_at=now, updated_at=now,
                secret_sealed=context.secret_box.seal(secret))
    session.add(work)
    session.flush()
    return WorkChange(work, secret=secret)


def delete_work(session: Session, workspace_id: int, work_id: int, *, actor: Actor, role: Role,
                now: datetime) -> WorkChange:
    """A soft delete: the work is hidden, its schedule canceled, its runs and usage kept."""
    check_may_edit_works(role)
    work = get_work(session, workspace_id, work_id, lock=True)
    schedule = schedule_of(session, work.id, lock=True)
    if schedule is not None and schedule.status != ScheduleStatus.CANCELED.value:
        moved = lifecycle.cancel(session, schedule, now=now, actor=actor, reason=f"work deleted by {actor.label}")
        schedule = moved.row if moved.ok else schedule
    work.deleted_at = now
    work.updated_at = now
    session.flush()
    return WorkChange(work, schedule)


# -- the schedule -----------------------------------------------------------------------------


def put_schedule(session: Session, workspace_id: int, work_id: int, *, enable=UNSET, cadence=UNSET,
                 billing_mode=UNSET, max_failure_before_pause=UNSET, provider_overrides=UNSET, weekday=UNSET,
                 day_of_month=UNSET, wall_time=UNSET, overlap_policy=UNSET, actor: Actor, role: Role,
                 now: datetime, context: WorksContext) -> WorkChange:
    """Create or update the work's schedule (see the module docstring)."""
    check_may_edit_works(role)
    work = get_work(session, workspace_id, work_id, lock=True)
    schedule = schedule_of(session, work.id, lock=True)
    if schedule is None and cadence is UNSET:
        raise InvalidInput("cadence is required to create a schedule", field="cadence", code="missing")
    enable = check_enable(enable) if enable is not UNSET else UNSET
    new_cadence = check_cadence(cadence) if cadence is not UNSET else None
    billing = check_billing_mode(billing_mode) if billing_mode is not UNSET else None
    max_failures = check_max_failures(max_failure_before_pause) if max_failure_before_pause is not UNSET else None
    overrides = check_overrides(provider_overrides) if provider_overrides is not UNSET else None
    overlap = check_overlap_policy(overlap_policy) if overlap_policy is not UNSET else None

    workspace, zone = _zone_of(session, workspace_id)
    effective_cadence = new_cadence or Cadence(schedule.cadence)
    named = check_named_slot(effective_cadence, weekday, day_of_month, wall_time)
    effective_billing = billing or (schedule.billing_mode if schedule else BillingMode.SUBSCRIPTION.value)
    context.plans.check(workspace.plan, effective_cadence, effective_billing)

    if schedule is None:
        return _create_schedule(session, work, cadence=effective_cadence, billing=effective_billing,
                                enable=True if enable is UNSET else enable,
                                max_failures=max_failures or DEFAULT_MAX_FAILURES, overrides=overrides or {},
                                named=named, overlap=overlap or OverlapPolicy.SKIP.value, zone=zone, actor=actor,
                                now=now, context=context)

    if schedule.status == ScheduleStatus.CANCELED.value and enable is False:
        raise Conflict(f"the schedule of work #{work.id} is canceled; PUT enable: true to activate it again",
                       field="enable", code="wrong_state", status_now=schedule.status)
    will_be_active = enable is True or (enable is UNSET and schedule.status == ScheduleStatus.ACTIVE.value)
    if will_be_active:
        _check_ready_to_run(work, _with_overrides(schedule, overrides), context)
    if billing is not None:
        schedule.billing_mode = billing
    if max_failures is not None:
        schedule.max_failure_before_pause = max_failures
    if overrides is not None:
        schedule.provider_overrides = overrides
    if overlap is not None:
        schedule.overlap_policy = overlap
    schedule.updated_at = now
    session.flush()

    new_grid = bool(named) or (new_cadence is not None and new_cadence.value != schedule.cadence)

    def lay():
        return _new_grid(session, work, effective_cadence, named, now=now, zone=zone, context=context,
                         current=schedule)

    if enable is True and schedule.status != ScheduleStatus.ACTIVE.value:
        if schedule.status == ScheduleStatus.PAUSED.value and not new_grid:
            grid, first = grid_of(schedule), _kept_grid_slot(schedule, now=now, zone=zone)
        else:
            grid, first = lay()
        _moved(lifecycle.enable(session, schedule, grid=grid, next_run_at=first, now=now, actor=actor))
    elif enable is False and schedule.status == ScheduleStatus.ACTIVE.value:
        paused = _moved(lifecycle.pause(session, schedule, now=now, actor=actor, reason=f"paused by {actor.label}"))
        if new_grid:
            grid, _ = lay()
            _moved(lifecycle.regrid(session, paused, grid=grid, next_run_at=None, now=now))
    elif new_grid:
        grid, first = lay()
        active = schedule.status == ScheduleStatus.ACTIVE.value
        _moved(lifecycle.regrid(session, schedule, grid=grid, next_run_at=first if active else None, now=now))
    return WorkChange(work, _reread(session, schedule.id))


def _with_overrides(schedule: WorkSchedule, overrides: dict | None) -> WorkSchedule:
    """The schedule as it would be with ``overrides`` (to check the pipeline it would run)."""
    if overrides is None:
        return schedule
    return WorkSchedule(provider_overrides=overrides)


def _reread(session: Session, schedule_id: int) -> WorkSchedule:
    return session.scalar(select(WorkSchedule).where(WorkSchedule.id == schedule_id)
                          .execution_options(populate_existing=True))


def _moved(outcome):
    """The schedule a move left, or the 409 its refusal is (someone changed it meanwhile)."""
    if not outcome.ok:
        raise Conflict(f"the schedule changed meanwhile (it is {outcome.status}); read it again",
                       code="wrong_state", status_now=outcome.status)
    return outcome.row


def _create_schedule(session: Session, work: Work, *, cadence: Cadence, billing: str, enable: bool, max_failures: int,
                     overrides: dict, named: NamedSlot, overlap: str, zone: str, actor: Actor, now: datetime,
                     context: WorksContext) -> WorkChange:
    schedule = WorkSchedule(work_id=work.id, workspace_id=work.workspace_id, provider_overrides=overrides)
    if enable:
        _check_ready_to_run(work, schedule, context)
    grid, first = _new_grid(session, work, cadence, named, now=now, zone=zone, context=context)
    schedule.cadence = cadence.value
    schedule.status = (ScheduleStatus.ACTIVE if enable else ScheduleStatus.PAUSED).value
    schedule.anchor_at, schedule.anchor_local = grid.anchor_at, grid.anchor_local
    schedule.next_run_at = first if enable else None
    schedule.billing_mode = billing
    schedule.max_failure_before_pause = max_failures
    schedule.overlap_policy = overlap
    schedule.failure_count = 0
    schedule.created_at = schedule.updated_at = now
    try:
        with session.begin_nested():
            session.add(schedule)
            session.flush()
    except IntegrityError:  # a concurrent PUT created it first (the unique work_id)
        raise Conflict(f"work #{work.id} got a schedule meanwhile; send the PUT again", code="conflict") from None
    lifecycle.record_creation(session, schedule, now=now, actor=actor)
    return WorkChange(work, schedule)


def delete_schedule(session: Session, workspace_id: int, work_id: int, *, actor: Actor, role: Role,
                    now: datetime) -> WorkChange:
    """DELETE: the schedule is canceled (kept, with its runs); canceling a canceled one changes nothing."""
    check_may_edit_works(role)
    work = get_work(session, workspace_id, work_id, lock=True)
    schedule = schedule_of(session, work.id, lock=True)
    if schedule is None:
        raise NotFound(f"work #{work.id} has no schedule")
    if schedule.status == ScheduleStatus.CANCELED.value:
        return WorkChange(work, schedule)
    return WorkChange(work, _moved(lifecycle.cancel(session, schedule, now=now, actor=actor,
                                                    reason=f"deleted by {actor.label}")))


# -- Run Now ----------------------------------------------------------------------------------


def run_now(session: Session, workspace_id: int, work_id: int, *, actor: Actor, role: Role, now: datetime,
            context: WorksContext) -> WorkChange:
    """Start a generation at once (FR-10).

    Before the slot it is a manual run: nextRunAt is kept, a success resets failureCount
    and a failure counts for nothing. When the slot is already due, it is claimed as the
    dispatcher would claim it and the run is that slot's (no second run for the slot). With
    no schedule, or a canceled one, the work still runs (manual, billed by use). A work
    already generating is a 409.
    """
    check_may_edit_works(role)
    work = get_work(session, workspace_id, work_id, lock=True)
    if work.generation_status == "generating":
        raise Conflict(f"work #{work.id} is generating; wait for that run to end", code="already_generating")
    schedule = schedule_of(session, work.id, lock=True)
    _check_ready_to_run(work, schedule, context)
    token = generation.new_token()
    due = (schedule is not None and schedule.status == ScheduleStatus.ACTIVE.value
           and schedule.next_run_at is not None and schedule.next_run_at <= now)
    if due:
        claimed = lifecycle.claim(session, schedule.id, seen_next_run_at=schedule.next_run_at, token=token, now=now)
        if not claimed.ok:
            raise Conflict(f"the due slot of work #{work.id} was just claimed; it is running", code="already_claimed")
        schedule = claimed.row
        slot = _slot_of(session, schedule, workspace_id)
        run = start_run(session, work, schedule, kind=RunKind.SCHEDULED, token=token, slot=slot, now=now, actor=actor,
                        reason=f"Run Now on the due slot, by {actor.label}")
    else:
        run = start_run(session, work, schedule, kind=RunKind.MANUAL, token=token, slot=None, now=now, actor=actor,
                        reason=f"Run Now by {actor.label}")
    return WorkChange(work, schedule, runs=[run])


def _slot_of(session: Session, schedule: WorkSchedule, workspace_id: int) -> datetime:
    """The grid slot a claim belongs to: the last slot at or before its scheduledFor (a retry keeps its slot)."""
    zone = session.scalar(select(Workspace.timezone).where(Workspace.id == workspace_id))
    try:
        return slot_at_or_before(grid_of(schedule), schedule.scheduled_for, zone) or schedule.scheduled_for
    except InvalidTimezone:
        return schedule.scheduled_for


# -- plans ------------------------------------------------------------------------------------


def change_workspace_plan(session: Session, workspace_id: int, plan: str, *, now: datetime, actor: Actor,
                          context: WorksContext) -> dict:
    """Give the workspace another plan; active subscription schedules it no longer allows are paused, and notified."""
    if plan not in context.plans.cadences:
        known = ", ".join(sorted(context.plans.cadences))
        raise InvalidInput(f"unknown plan {plan!r}; configured plans: {known}", field="plan", code="unknown_plan")
    workspace = session.scalar(select(Workspace).where(Workspace.id == workspace_id).with_for_update())
    if workspace is None:
        raise NotFound("no such workspace")
    old, workspace.plan = workspace.plan, plan
    session.flush()
    paused, actions = [], []
    schedules = session.scalars(select(WorkSchedule).where(
        WorkSchedule.workspace_id == workspace_id, WorkSchedule.status == ScheduleStatus.ACTIVE.value,
        WorkSchedule.billing_mode == BillingMode.SUBSCRIPTION.value).order_by(WorkSchedule.id))
    for schedule in list(schedules):
        why = context.plans.refusal(plan, Cadence(schedule.cadence), schedule.billing_mode)
        if why is None:
            continue
        outcome, raised = pause_outside_plan(session, schedule, why=why, now=now, actor=actor)
        if outcome:
            paused.append(schedule.work_id)
            actions += raised
    return {"from": old, "to": plan, "paused_works": paused, "actions": actions}


def pause_outside_plan(session: Session, schedule: WorkSchedule, *, why: str, now: datetime,
                       actor: Actor) -> tuple[bool, list]:
    """Pause a subscription schedule its plan no longer allows, and tell the workspace (once per pause)."""
    reason = f"paused: {why}"
    moved = lifecycle.pause(session, schedule, now=now, actor=actor, reason=reason)
    if not moved.ok:
        return False, []
    work = session.get(Work, schedule.work_id)
    notified = notify(session, schedule.workspace_id, kind="work_plan_paused",
                      title=f"Schedule of {work.name!r} paused: its cadence is not in the plan", body=reason,
                      subject=f"work:{work.id}", dedupe_key=f"work_plan_paused:schedule:{schedule.id}:{now.isoformat()}",
                      now=now, actor=actor)
    return True, notified.actions
