"""Works and their schedules over JSON.

- The second seed's paths (FR-1), with its field names: ``GET|PUT|DELETE /api/works/ID/schedule``,
  ``POST /api/works/ID/schedule/run``.
- Works themselves under ``/api/v1/works``: create, list, get (with the schedule in the seed's
  shape and the last runs), delete (soft), and the usage ledger per month.
- The webhook pipeline's callback, ``POST /api/works/runs/TOKEN/callback``: public, proved by
  the signature of its body with the work's secret (see ``webapp/public.py``).

Every rule lives in :mod:`models.works`; these views parse, call, and render.
"""

import hmac

from flask import Blueprint, jsonify, request

from jobs.works import works_context
from models.core.database import db, write_session
from models.core.errors import InvalidInput, NotFound
from models.core.moves import Actor
from models.core.secrets_box import SecretUnreadable
from models.timing.wall_time import InvalidTimezone, to_local
from models.timing.cadence import WEEKDAYS, Cadence
from models.works.access import check_may_edit_works
from models.works.operations import (
    MAX_SETTINGS_KEYS,
    UNSET,
    create_work,
    delete_schedule,
    delete_work,
    put_schedule,
    run_now,
)
from models.works.pipelines.webhook_pipeline import SIGNATURE_HEADER, signature
from models.works.reading import (
    get_work,
    list_works,
    read_works_cursor,
    runs_of,
    schedule_of,
    upcoming_slots,
    usage_by_month,
)
from models.works.runs import hand_off_or_release, record_outcome, run_by_token
from models.works.tables import (
    MAX_FAILURES_BEFORE_PAUSE,
    PROVIDER_CAPABILITIES,
    BillingMode,
    GenerationStatus,
    OverlapPolicy,
    RunKind,
    RunStatus,
    ScheduleStatus,
    Work,
    WorkRun,
)
from webapp.api.idempotency import idempotent
from webapp.api.parsing import json_body, query_limit
from webapp.api.serialize import iso
from webapp.api.spec import (
    IDEMPOTENCY_KEY,
    INSTANT,
    MAYBE_INSTANT,
    errors,
    json_content,
    nullable,
    page_of,
    ref,
    response_of,
    row_id,
)
from webapp.auth import Unauthorized, api_caller

seed = Blueprint("api_work_schedules", __name__, url_prefix="/api/works")
bp = Blueprint("api_works", __name__, url_prefix="/api/v1/works")

SCHEDULE_FIELDS = {"enable": "enable", "cadence": "cadence", "billingMode": "billing_mode",
                   "maxFailureBeforePause": "max_failure_before_pause", "providerOverrides": "provider_overrides",
                   "weekday": "weekday", "dayOfMonth": "day_of_month", "time": "wall_time",
                   "overlapPolicy": "overlap_policy"}
CREATE_FIELDS = {"name", "pipeline", "settings"}


def _check_fields(body: dict, allowed) -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; expected {', '.join(sorted(allowed))}",
                           field=unknown[0], code="unknown_field")


def _local(instant, zone: str) -> str | None:
    if instant is None:
        return None
    try:
        return to_local(instant, zone).isoformat()
    except InvalidTimezone:
        return None


def schedule_json(work: Work, schedule, zone: str, now=None) -> dict:
    """A work's schedule with the seed's field names; a work without one reads as ``disabled``."""
    if schedule is None:
        return {"workId": work.id, "status": "disabled", "cadence": None, "nextRunAt": None, "scheduledFor": None,
                "billingMode": None, "maxFailureBeforePause": None, "failureCount": 0, "providerOverrides": {},
                "lastRunAt": None, "lastRunStatus": None}
    body = {
        "id": schedule.id,
        "workId": work.id,
        "status": schedule.status,
        "cadence": schedule.cadence,
        "nextRunAt": iso(schedule.next_run_at),
        "nextRunLocal": _local(schedule.next_run_at, zone),
        "scheduledFor": iso(schedule.scheduled_for),
        "claimedAt": iso(schedule.claimed_at),
        "billingMode": schedule.billing_mode,
        "maxFailureBeforePause": schedule.max_failure_before_pause,
        "failureCount": schedule.failure_count,
        "overlapPolicy": schedule.overlap_policy,
        "providerOverrides": schedule.provider_overrides or {},
        "lastRunAt": iso(schedule.last_run_at),
        "lastRunStatus": schedule.last_run_status,
        "pausedReason": schedule.paused_reason,
        "grid": grid_json(schedule, zone),
        "createdAt": iso(schedule.created_at),
        "updatedAt": iso(schedule.updated_at),
    }
    if now is not None and schedule.status == "active":
        body["upcoming"] = [iso(slot) for slot in upcoming_slots(schedule, zone, now, limit=3)]
    return body


def grid_json(schedule, zone: str) -> dict:
    """Where the slots sit: the anchor, and for calendar cadences the weekday, day of month and wall time it names."""
    anchor = schedule.anchor_local_naive if schedule.anchor_local else None
    body = {"anchorAt": iso(schedule.anchor_at), "anchorLocal": anchor.strftime("%Y-%m-%dT%H:%M") if anchor else None,
            "timezone": zone}
    if anchor is not None:
        body["time"] = anchor.strftime("%H:%M")
        if schedule.cadence == Cadence.WEEKLY.value:
            body["weekday"] = WEEKDAYS[anchor.weekday()]
        if schedule.cadence == Cadence.MONTHLY.value:
            body["dayOfMonth"] = anchor.day
    return body


def run_json(run: WorkRun) -> dict:
    return {
        "id": run.id,
        "work_id": run.work_id,
        "kind": run.kind,
        "status": run.status,
        "slot": iso(run.slot),
        "pipeline": run.pipeline,
        "providers": run.providers or {},
        "billing_mode": run.billing_mode,
        "started_at": iso(run.started_at),
        "deadline_at": iso(run.deadline_at),
        "finished_at": iso(run.finished_at),
        "duration_seconds": round(run.duration.total_seconds(), 3) if run.duration is not None else None,
        "error": run.error,
    }


def work_json(session, work: Work, zone: str, *, schedule=UNSET, runs: bool = False, now=None) -> dict:
    if schedule is UNSET:
        schedule = schedule_of(session, work.id)
    body = {
        "id": work.id,
        "name": work.name,
        "pipeline": work.pipeline,
        "settings": work.settings or {},
        "generation_status": work.generation_status,
        "generation_started_at": iso(work.generation_started_at),
        "generation_finished_at": iso(work.generation_finished_at),
        "last_error": work.last_error,
        "created_at": iso(work.created_at),
        "deleted_at": iso(work.deleted_at),
        "schedule": schedule_json(work, schedule, zone, now),
    }
    if runs:
        body["runs"] = [run_json(run) for run in runs_of(session, work.id)]
    return body


# -- the seed's paths -----------------------------------------------------------------------------


@seed.get("/<int:work_id>/schedule")
def get_schedule(work_id: int):
    """The work's schedule (``disabled`` when it has none); work edit rights, as the seed says."""
    caller = api_caller()
    check_may_edit_works(caller.role)
    work = get_work(db.session, caller.workspace.id, work_id)
    now = works_context().clock.now()
    return jsonify(schedule_json(work, schedule_of(db.session, work.id), caller.workspace.timezone, now))


class _DryRun(Exception):
    """Rolls a PUT's transaction back once its answer is read (``?dry_run=1``)."""


@seed.put("/<int:work_id>/schedule")
def put(work_id: int):
    """Create or update the work's schedule; omitted fields keep their values; ``dry_run=1`` only shows it."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, SCHEDULE_FIELDS)
    dry_run = request.args.get("dry_run", "0")
    if dry_run not in ("0", "1"):
        raise InvalidInput("dry_run is 0 or 1", field="dry_run", code="bad_flag")
    fields = {SCHEDULE_FIELDS[name]: value for name, value in body.items()}
    context = works_context()
    now = context.clock.now()
    try:
        with write_session() as session:
            existed = schedule_of(session, work_id) is not None
            change = put_schedule(session, caller.workspace.id, work_id, actor=caller.actor, role=caller.role,
                                  now=now, context=context, **fields)
            answer = schedule_json(change.work, change.schedule, caller.workspace.timezone, now)
            if dry_run == "1":
                raise _DryRun
    except _DryRun:
        return jsonify({**answer, "dryRun": True}), 200
    return jsonify(answer), 200 if existed else 201


@seed.delete("/<int:work_id>/schedule")
def delete(work_id: int):
    """Cancel the schedule (kept, with its runs); answers with it."""
    caller = api_caller()
    now = works_context().clock.now()
    with write_session() as session:
        change = delete_schedule(session, caller.workspace.id, work_id, actor=caller.actor, role=caller.role, now=now)
        answer = schedule_json(change.work, change.schedule, caller.workspace.timezone)
    return jsonify(answer)


@seed.post("/<int:work_id>/schedule/run")
@idempotent
def run(work_id: int):
    """Run Now: a generation starts at once; 409 while one is running, 503 when the works queue cannot take it."""
    caller = api_caller()
    context = works_context()
    now = context.clock.now()
    with write_session() as session:
        change = run_now(session, caller.workspace.id, work_id, actor=caller.actor, role=caller.role, now=now,
                         context=context)
        run_ids = [started.id for started in change.runs]
    hand_off_or_release(context, change.runs, actor=caller.actor)
    db.session.rollback()  # end the read snapshot taken before the write (the token's look)
    session = db.session
    work = get_work(session, caller.workspace.id, work_id)
    started = session.get(WorkRun, run_ids[0], populate_existing=True)
    return jsonify({"run": run_json(started),
                    "schedule": schedule_json(work, schedule_of(session, work.id), caller.workspace.timezone)}), 202


@seed.post("/runs/<token>/callback")
def callback(token: str):
    """The webhook pipeline's callback: the signed result of one run (public; see webapp/public.py)."""
    given = request.headers.get(SIGNATURE_HEADER, "")
    if not given:
        raise Unauthorized(f"send {SIGNATURE_HEADER}: sha256=<hex HMAC-SHA256 of the body with the work's secret>",
                           code="bad_signature")
    context = works_context()
    run = run_by_token(db.session, token[:64], lock=False)
    if run is None:
        raise NotFound("no run with this token")
    work = db.session.get(Work, run.work_id)
    raw = request.get_data(cache=True)
    try:
        secret = context.secret_box.open(work.secret_sealed) if work.secret_sealed else None
    except SecretUnreadable:
        secret = None
    if secret is None or not hmac.compare_digest(given, signature(secret, raw)):
        raise Unauthorized("the signature does not match this body and the work's secret", code="bad_signature")
    body = json_body()
    _check_fields(body, {"status", "error"})
    status = body.get("status")
    if status not in ("generated", "error"):
        raise InvalidInput("status must be generated or error", field="status", code="bad_status")
    error = body.get("error")
    if error is not None and not isinstance(error, str):
        raise InvalidInput("error must be a string", field="error", code="wrong_type")
    with write_session() as session:
        ended = record_outcome(session, token, succeeded=status == "generated", error=error,
                               now=context.clock.now(), actor=Actor(label="callback:webhook"), context=context)
        answer = {"run": run_json(ended.run), "recorded": ended.recorded}
    context.announce(ended.actions)
    return jsonify(answer)


# -- /api/v1/works ----------------------------------------------------------------------------


@bp.post("")
@idempotent(sealed=("secret",))
def create():
    """Create a work: ``name``, ``pipeline`` (an installed pipeline plugin) and its ``settings``."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, CREATE_FIELDS)
    context = works_context()
    with write_session() as session:
        change = create_work(session, caller.workspace.id, name=body.get("name"), pipeline=body.get("pipeline"),
                             settings=body.get("settings"), actor=caller.actor, role=caller.role,
                             now=context.clock.now(), context=context)
        answer = work_json(session, change.work, caller.workspace.timezone, schedule=None)
    answer["secret"] = change.secret  # shown once: the webhook pipeline signs with it
    return jsonify(answer), 201


@bp.get("")
def index():
    """The workspace's works by id, each with its schedule; ``cursor`` continues a page."""
    caller = api_caller()
    limit = query_limit()
    cursor = request.args.get("cursor")
    found = list_works(db.session, caller.workspace.id, after=read_works_cursor(cursor) if cursor else None,
                       limit=limit + 1)
    page = found[:limit]
    return jsonify({
        "works": [work_json(db.session, work, caller.workspace.timezone, schedule=schedule) for work, schedule in page],
        "next_cursor": str(page[-1][0].id) if len(found) > limit else None,
    })


@bp.get("/usage")
def usage():
    """The usage ledger, summed per month (in the workspace's zone), newest first."""
    caller = api_caller()
    return jsonify({"months": [{"month": m.month, "generations": m.generations, "scheduled": m.scheduled,
                                "manual": m.manual} for m in usage_by_month(db.session, caller.workspace.id)]})


@bp.get("/<int:work_id>")
def show(work_id: int):
    """One work with its schedule (the seed's shape) and its last runs."""
    caller = api_caller()
    work = get_work(db.session, caller.workspace.id, work_id)
    return jsonify(work_json(db.session, work, caller.workspace.timezone, runs=True, now=works_context().clock.now()))


@bp.delete("/<int:work_id>")
def remove(work_id: int):
    """Delete a work (soft): its schedule is canceled, its runs and usage kept."""
    caller = api_caller()
    now = works_context().clock.now()
    with write_session() as session:
        change = delete_work(session, caller.workspace.id, work_id, actor=caller.actor, role=caller.role, now=now)
        answer = work_json(session, change.work, caller.workspace.timezone)
    return jsonify(answer)


# -- the document -----------------------------------------------------------------------------

_SCHEDULE = ref("WorkSchedule")
_RUN = ref("WorkRun")
_WORK = ref("Work")
_ID_OR_NULL = {"type": ["integer", "null"]}
_TEXT_OR_NULL = {"type": ["string", "null"]}
_CADENCES = [cadence.value for cadence in Cadence]
_SCHEDULE_WRITES = ("400", "403", "404", "409", "413", "422")

OPENAPI = {
    "schemas": {
        "WorkSchedule": {
            "type": "object",
            "description": "The second seed's shape; a work without a schedule reads as `disabled`.",
            "required": ["workId", "status", "cadence", "nextRunAt", "scheduledFor", "billingMode",
                         "maxFailureBeforePause", "failureCount", "providerOverrides", "lastRunAt", "lastRunStatus"],
            "properties": {
                "id": {"type": "integer"},
                "workId": {"type": "integer"},
                "status": {"enum": [status.value for status in ScheduleStatus]},
                "cadence": nullable({"enum": _CADENCES}),
                "nextRunAt": MAYBE_INSTANT,
                "nextRunLocal": _TEXT_OR_NULL,
                "scheduledFor": MAYBE_INSTANT,
                "claimedAt": MAYBE_INSTANT,
                "billingMode": nullable({"enum": [mode.value for mode in BillingMode]}),
                "maxFailureBeforePause": _ID_OR_NULL,
                "failureCount": {"type": "integer", "minimum": 0},
                "overlapPolicy": {"enum": [policy.value for policy in OverlapPolicy]},
                "dryRun": {"type": "boolean", "description": "true: the schedule a PUT would leave; nothing saved"},
                "providerOverrides": {"type": "object", "additionalProperties": {"type": "string"}},
                "lastRunAt": MAYBE_INSTANT,
                "lastRunStatus": _TEXT_OR_NULL,
                "pausedReason": _TEXT_OR_NULL,
                "grid": {"type": "object", "properties": {"anchorAt": MAYBE_INSTANT, "anchorLocal": _TEXT_OR_NULL,
                                                          "timezone": {"type": "string"},
                                                          "weekday": {"enum": list(WEEKDAYS)},
                                                          "dayOfMonth": {"type": "integer"},
                                                          "time": {"type": "string"}}},
                "createdAt": INSTANT,
                "updatedAt": INSTANT,
                "upcoming": {"type": "array", "items": INSTANT, "description": "the next slots (active only)"},
            },
        },
        "WorkScheduleChange": {
            "type": "object",
            "description": "Omitted fields keep their values; creating a schedule needs `cadence`.",
            "additionalProperties": False,
            "properties": {
                "enable": {"type": "boolean"},
                "cadence": {"enum": _CADENCES},
                "billingMode": {"enum": [mode.value for mode in BillingMode]},
                "maxFailureBeforePause": {"type": "integer", "minimum": 1, "maximum": MAX_FAILURES_BEFORE_PAUSE},
                "overlapPolicy": {"enum": [policy.value for policy in OverlapPolicy],
                                  "description": "a slot due while the last generation runs: skipped, or run once "
                                                 "it ends"},
                "weekday": {"enum": list(WEEKDAYS), "description": "weekly: the day it runs"},
                "dayOfMonth": {"type": "integer", "minimum": 1, "maximum": 31,
                               "description": "monthly: the day it runs (29–31: the last day of shorter months)"},
                "time": {"type": "string", "pattern": "^([01][0-9]|2[0-3]):[0-5][0-9]$",
                         "description": "daily, weekly, monthly: the wall time, in the workspace's zone"},
                "providerOverrides": {"type": "object", "description": "capability → plugin id; null removes one",
                                      "propertyNames": {"enum": list(PROVIDER_CAPABILITIES)},
                                      "additionalProperties": {"type": ["string", "null"]}},
            },
        },
        "WorkRun": {
            "type": "object",
            "required": ["id", "work_id", "kind", "status", "pipeline", "providers", "started_at"],
            "properties": {
                "id": {"type": "integer"},
                "work_id": {"type": "integer"},
                "kind": {"enum": [kind.value for kind in RunKind]},
                "status": {"enum": [status.value for status in RunStatus]},
                "slot": MAYBE_INSTANT,
                "pipeline": {"type": "string"},
                "providers": {"type": "object"},
                "billing_mode": _TEXT_OR_NULL,
                "started_at": MAYBE_INSTANT,
                "deadline_at": MAYBE_INSTANT,
                "finished_at": MAYBE_INSTANT,
                "duration_seconds": {"type": ["number", "null"]},
                "error": _TEXT_OR_NULL,
            },
        },
        "Work": {
            "type": "object",
            "required": ["id", "name", "pipeline", "settings", "generation_status", "created_at", "schedule"],
            "properties": {
                "id": {"type": "integer"},
                "name": {"type": "string"},
                "pipeline": {"type": "string"},
                "settings": {"type": "object"},
                "generation_status": {"enum": [status.value for status in GenerationStatus]},
                "generation_started_at": MAYBE_INSTANT,
                "generation_finished_at": MAYBE_INSTANT,
                "last_error": _TEXT_OR_NULL,
                "created_at": INSTANT,
                "deleted_at": MAYBE_INSTANT,
                "schedule": _SCHEDULE,
                "runs": {"type": "array", "items": _RUN},
                "secret": {"type": "string",
                           "description": "shown once, on create: the webhook pipeline signs with it"},
            },
        },
        "NewWork": {
            "type": "object",
            "required": ["name", "pipeline"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1, "maxLength": 100},
                "pipeline": {"type": "string", "minLength": 1,
                             "description": "an installed pipeline plugin (log, webhook)"},
                "settings": nullable({"type": "object", "maxProperties": MAX_SETTINGS_KEYS,
                                      "description": "checked by the pipeline"}),
            },
        },
    },
    "paths": {
        "/api/works/{work_id}/schedule": {
            "parameters": [row_id("work_id")],
            "get": {"summary": "The work's schedule (`disabled` when it has none; ops)",
                    "responses": {"200": response_of("The schedule.", _SCHEDULE), **errors("403", "404")}},
            "put": {"summary": "Create or update the work's schedule (ops); omitted fields keep their values; "
                            "`dry_run=1` answers the schedule it would leave and saves nothing",
                    "parameters": [{"name": "dry_run", "in": "query", "required": False,
                                    "schema": {"enum": ["0", "1"]}}],
                    "requestBody": {"required": True, **json_content(ref("WorkScheduleChange"),
                                                                     {"cadence": "daily", "billingMode": "usage"})},
                    "responses": {"200": response_of("Updated.", _SCHEDULE),
                                  "201": response_of("Created.", _SCHEDULE), **errors(*_SCHEDULE_WRITES)}},
            "delete": {"summary": "Cancel the schedule (ops); it is kept, with its runs",
                       "responses": {"200": response_of("The canceled schedule.", _SCHEDULE),
                                     **errors("403", "404", "409")}},
        },
        "/api/works/{work_id}/schedule/run": {
            "parameters": [row_id("work_id")],
            "post": {"summary": "Run Now (ops): a generation starts at once; 409 while one is running "
                                "(honours Idempotency-Key)",
                     "parameters": [IDEMPOTENCY_KEY],
                     "responses": {"202": response_of("Started.", {
                         "type": "object", "required": ["run", "schedule"],
                         "properties": {"run": _RUN, "schedule": _SCHEDULE}}),
                         **errors("403", "404", "409", "422", "503")}},
        },
        "/api/works/runs/{token}/callback": {
            "parameters": [{"name": "token", "in": "path", "required": True,
                            "schema": {"type": "string", "minLength": 1, "maxLength": 200}}],
            "post": {"summary": "The webhook pipeline's callback: the signed result of one run (public)",
                     "security": [],
                     "parameters": [{"name": SIGNATURE_HEADER, "in": "header", "required": False,
                                     "schema": {"type": "string"},
                                     "description": "sha256=<hex HMAC-SHA256 of the body with the work's secret>"}],
                     "requestBody": {"required": True, **json_content({
                         "type": "object", "required": ["status"], "additionalProperties": False,
                         "properties": {"status": {"enum": ["generated", "error"]},
                                        "error": nullable({"type": "string"})}})},
                     "responses": {"200": response_of("Recorded (or already settled).", {
                         "type": "object", "required": ["run", "recorded"],
                         "properties": {"run": _RUN, "recorded": {"type": "boolean"}}}),
                         **errors("400", "401", "404", "409", "413", "422")}},
        },
        "/api/v1/works": {
            "post": {"summary": "Create a work (ops); its signing secret is answered once, and to a replay "
                                "(honours Idempotency-Key)",
                     "parameters": [IDEMPOTENCY_KEY],
                     "requestBody": {"required": True, **json_content(ref("NewWork"), {
                         "name": "Weekly digest", "pipeline": "log", "settings": {"seconds": 0}})},
                     "responses": {"201": response_of("The work, with its secret.", _WORK),
                                   **errors("400", "403", "409", "413", "422")}},
            "get": {"summary": "The workspace's works by id, each with its schedule",
                    "parameters": [
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                        {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": response_of("A page.", page_of("works", _WORK)), **errors("422")}},
        },
        "/api/v1/works/usage": {
            "get": {"summary": "The usage ledger, summed per month (the workspace's zone), newest first",
                    "responses": {"200": response_of("Per month.", {
                        "type": "object", "required": ["months"], "properties": {"months": {"type": "array", "items": {
                            "type": "object", "required": ["month", "generations", "scheduled", "manual"],
                            "properties": {"month": {"type": "string"}, "generations": {"type": "integer"},
                                           "scheduled": {"type": "integer"}, "manual": {"type": "integer"}}}}}}),
                        **errors()}},
        },
        "/api/v1/works/{work_id}": {
            "parameters": [row_id("work_id")],
            "get": {"summary": "One work with its schedule and its last runs",
                    "responses": {"200": response_of("The work.", _WORK), **errors("404")}},
            "delete": {"summary": "Delete a work (soft; ops): its schedule is canceled, its runs and usage kept",
                       "responses": {"200": response_of("The deleted work.", _WORK), **errors("403", "404", "409")}},
        },
    },
}
