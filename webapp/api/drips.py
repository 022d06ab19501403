"""``/api/v1``: drip campaigns, contacts and enrollments, and enrolling from a CSV file.

| endpoint | who | what |
|---|---|---|
| ``POST /campaigns`` | marketer | ``name``, ``channel``, ``steps``, optional ``send_window``, ``on_failure`` → 201 draft |
| ``GET /campaigns``, ``GET /campaigns/ID`` | marketer | list; one with per-step counts |
| ``PATCH /campaigns/ID`` | marketer | any of the create fields |
| ``POST /campaigns/ID/activate``, ``/resume``, ``/pause`` | marketer | ``/archive``: ops |
| ``POST /campaigns/ID/enrollments`` | marketer | ``contact_id`` → 201 |
| ``GET /campaigns/ID/enrollments`` | marketer | ``status``, ``limit``, ``cursor`` |
| ``POST /campaigns/ID/enrollments.csv[?dry_run=1]`` | marketer | a CSV file (up to 20 MiB): the per-line report and an ``import_id`` |
| ``POST /campaigns/ID/imports/IMPORT_ID/commit`` | marketer | enroll exactly the lines the dry run accepted |
| ``POST /contacts``, ``GET /contacts``, ``GET|PATCH /contacts/ID`` | marketer | ``email`` and/or ``phone``, ``name``, ``timezone``, ``attributes`` |
| ``POST /contacts/ID/unsubscribe`` | marketer | never sent to again |
| ``GET /enrollments/ID`` | marketer | with its sends and timeline |
| ``POST /enrollments/ID/remove`` | ops | exits it (``removed``) |
"""

from flask import Blueprint, jsonify, request

from models.core.database import db, read_session, write_session
from models.core.errors import InvalidInput
from models.core.keyset import decode_cursor, encode_cursor
from models.core.runtime import runtime
from models.drips import operations as ops
from models.drips.enroll_csv import EnrollmentImport
from models.drips.reading import (
    attempts_of,
    current_version,
    enrollment_sends,
    enrollment_timeline,
    funnel,
    get_campaign,
    get_contact,
    get_enrollment,
    list_campaigns,
    list_contacts,
    list_enrollments,
    version_steps,
)
from models.drips.checks import MAX_ATTRIBUTES, MAX_CONTACT_NAME, MAX_NAME, MAX_STEPS
from models.drips.tables import CampaignStatus, CampaignVersion, ContactStatus, EnrollmentStatus, OnFailure
from models.drips.schedule import contact_zone
from models.channels.reading import channel_names
from models.imports.runs import commit, dry_run
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
from webapp.auth import api_caller
from webapp.drip_runtime import base_url, follow, sending_context
from webapp.uploads import takes_upload, uploaded_file

bp = Blueprint("api_drips", __name__, url_prefix="/api/v1")

CREATE_CAMPAIGN = {"name", "channel", "steps", "send_window", "on_failure"}


def _check_fields(body: dict, allowed: set[str]) -> None:
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0]!r}; expected {', '.join(sorted(allowed))}",
                           field=unknown[0], code="unknown_field")


def _cursor_id(name: str = "cursor") -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return None

    def ident(text: str) -> int:
        if not text.isdecimal() or not 0 < int(text) <= 2**31 - 1:
            raise ValueError("not an id")
        return int(text)

    return decode_cursor(raw, ident)[0]


def _choice(name: str, allowed) -> str | None:
    value = request.args.get(name)
    if value is None:
        return None
    if value not in allowed:
        raise InvalidInput(f"unknown {name} {value[:40]!r}; one of {', '.join(allowed)}", field=name)
    return value


# -- shapes ---------------------------------------------------------------------------------------


def step_counts(step) -> dict:
    return {"enrolled": step.enrolled, "scheduled": step.scheduled, "waiting_for_window": step.waiting_for_window,
            "sending": step.sending, "held": step.held, "sent": step.sent, "outcome_unknown": step.outcome_unknown,
            "failed": step.sends["failed"], "missed": step.sends["missed"], "skipped": step.sends["skipped"],
            "exited": dict(step.exited)}


def campaign_json(session, campaign, *, counts: bool = False) -> dict:
    names = channel_names(session, campaign.workspace_id)
    version = current_version(session, campaign.id)
    steps = version_steps(session, version.id)
    body = {
        "id": campaign.id, "name": campaign.name, "channel": names.get(campaign.channel_id),
        "status": campaign.status, "send_window": campaign.send_window, "on_failure": campaign.on_failure,
        "version": version.number,
        "steps": [{"id": step.id, "position": step.position, "delay": step.delay, "subject": step.subject,
                   "body": step.body, "channel": names.get(step.channel_id) if step.channel_id else None,
                   "send_window": step.send_window} for step in steps],
        "created_at": iso(campaign.created_at), "updated_at": iso(campaign.updated_at),
        "activated_at": iso(campaign.activated_at), "paused_at": iso(campaign.paused_at),
        "archived_at": iso(campaign.archived_at),
    }
    if counts:
        per_step = funnel(session, campaign.id, len(steps))
        for index, entry in enumerate(body["steps"]):
            entry["counts"] = step_counts(per_step[index])
        body["older_steps"] = [{"position": s.index, "counts": step_counts(s)} for s in per_step[len(steps):]]
    return body


def contact_json(contact, workspace_zone: str | None) -> dict:
    _, note = contact_zone(contact.timezone, workspace_zone)
    return {"id": contact.id, "email": contact.email, "phone": contact.phone, "name": contact.name,
            "timezone": contact.timezone, "zone_note": note, "attributes": contact.attributes or {},
            "status": contact.status, "unsubscribed_at": iso(contact.unsubscribed_at),
            "bounced_at": iso(contact.bounced_at), "created_at": iso(contact.created_at),
            "updated_at": iso(contact.updated_at)}


def enrollment_json(enrollment, *, version: int | None = None) -> dict:
    body = {"id": enrollment.id, "campaign_id": enrollment.campaign_id, "contact_id": enrollment.contact_id,
            "status": enrollment.status, "current_step": enrollment.current_step,
            "next_send_at": iso(enrollment.next_send_at) if enrollment.status == "active" else None,
            "schedule_note": enrollment.schedule_note, "enrolled_at": iso(enrollment.enrolled_at),
            "completed_at": iso(enrollment.completed_at), "exited_at": iso(enrollment.exited_at),
            "exit_reason": enrollment.exit_reason}
    if version is not None:
        body["version"] = version
    return body


def enrollment_detail(session, enrollment) -> dict:
    body = enrollment_json(enrollment, version=session.get(CampaignVersion, enrollment.version_id).number)
    sends = enrollment_sends(session, enrollment.id)
    attempts = attempts_of(session, enrollment.workspace_id, sends)
    body["sends"] = [{
        "id": send.id, "step": send.step_index, "dedupe_key": send.dedupe_key, "status": send.status,
        "address": send.address, "attempt_id": send.attempt_id, "reason": send.reason,
        "finished_at": iso(send.finished_at), "settled_at": iso(send.settled_at),
        "attempts": [{"id": a.id, "status": a.status, "publish_at": iso(a.publish_at),
                      "rescheduled_from": a.rescheduled_from_id}
                     for a in attempts.values() if a.thing_id == send.dedupe_key],
    } for send in sends]
    body["timeline"] = [{"at": iso(entry.at), "kind": entry.kind, "what": entry.what, "actor": entry.actor,
                         "reason": entry.reason, "step": entry.step, "action_id": entry.action_id}
                        for entry in enrollment_timeline(session, enrollment)]
    return body


# -- campaigns ------------------------------------------------------------------------------------


@bp.post("/campaigns")
@idempotent
def create_campaign():
    """Create a draft campaign with its steps."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, CREATE_CAMPAIGN)
    for name in ("name", "channel", "steps"):
        if body.get(name) is None:
            raise InvalidInput(f"{name} is required", field=name, code="missing")
    rt = runtime()
    with write_session() as session:
        campaign = ops.create_campaign(session, caller.workspace.id, name=body["name"], channel=body["channel"],
                                       steps=body["steps"], send_window=body.get("send_window"),
                                       on_failure=body.get("on_failure", "exit"), actor=caller.actor, now=rt.now())
        return jsonify(campaign_json(session, campaign)), 201


@bp.get("/campaigns")
def campaigns():
    """The workspace's campaigns."""
    caller = api_caller()
    return jsonify({"campaigns": [campaign_json(db.session, c) for c in list_campaigns(db.session, caller.workspace.id)]})


@bp.get("/campaigns/<int:campaign_id>")
def campaign(campaign_id: int):
    """One campaign with per-step counts."""
    caller = api_caller()
    return jsonify(campaign_json(db.session, get_campaign(db.session, caller.workspace.id, campaign_id), counts=True))


@bp.patch("/campaigns/<int:campaign_id>")
def update_campaign(campaign_id: int):
    """Change a campaign; a structural change of an active campaign's steps makes a new version."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, CREATE_CAMPAIGN)
    if not body:
        raise InvalidInput(f"nothing to change; send any of {', '.join(sorted(CREATE_CAMPAIGN))}", code="missing")
    for name in ("name", "channel", "steps", "on_failure"):
        if name in body and body[name] is None:
            raise InvalidInput(f"{name} cannot be null", field=name, code="missing")
    rt = runtime()
    with write_session() as session:
        change = ops.update_campaign(session, caller.workspace.id, campaign_id, changes=body, actor=caller.actor,
                                     now=rt.now())
        answer = campaign_json(session, change.subject)
    if change.note:
        answer["note"] = change.note
    answer["retimed"] = change.counts.get("retimed", 0)
    return jsonify(answer)


def _campaign_move(campaign_id: int, operation, **kwargs):
    caller = api_caller()
    rt = runtime()
    with write_session() as session:
        change = operation(session, caller.workspace.id, campaign_id, actor=caller.actor, now=rt.now(), **kwargs)
        campaign_id = change.subject.id
    followed = follow(campaign_id, caller.actor)
    with read_session() as session:  # a fresh look: the request's own session began before the move
        answer = campaign_json(session, get_campaign(session, caller.workspace.id, campaign_id))
    answer["followed"] = followed
    return jsonify(answer)


@bp.post("/campaigns/<int:campaign_id>/activate")
def activate(campaign_id: int):
    """draft → active (or paused → active); email steps need TICKWORK_BASE_URL."""
    return _campaign_move(campaign_id, ops.activate_campaign, base_url=base_url())


@bp.post("/campaigns/<int:campaign_id>/resume")
def resume(campaign_id: int):
    """paused → active: held sends get a new attempt, timed from now into their window."""
    return _campaign_move(campaign_id, ops.resume_campaign, base_url=base_url())


@bp.post("/campaigns/<int:campaign_id>/pause")
def pause(campaign_id: int):
    """active → paused: nothing is minted, queued attempts are cancelled (kind paused)."""
    return _campaign_move(campaign_id, ops.pause_campaign)


@bp.post("/campaigns/<int:campaign_id>/archive")
def archive(campaign_id: int):
    """Archive (ops): active enrollments exit."""
    return _campaign_move(campaign_id, ops.archive_campaign, role=api_caller().role)


# -- enrollments ----------------------------------------------------------------------------------


@bp.post("/campaigns/<int:campaign_id>/enrollments")
@idempotent
def enroll(campaign_id: int):
    """Enroll one contact; a first step due now is minted at once."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, {"contact_id"})
    if body.get("contact_id") is None:
        raise InvalidInput("contact_id is required", field="contact_id", code="missing")
    rt = runtime()
    with write_session() as session:
        change = ops.enroll(session, caller.workspace.id, campaign_id, body["contact_id"], actor=caller.actor,
                            now=rt.now(), ctx=sending_context(caller.actor))
        answer = enrollment_json(change.subject)
    rt.announce_due(change.new_rows)
    return jsonify(answer), 201


@bp.get("/campaigns/<int:campaign_id>/enrollments")
def enrollments(campaign_id: int):
    """A campaign's enrollments with status and step, by id; ``status``, ``limit``, ``cursor``."""
    caller = api_caller()
    campaign = get_campaign(db.session, caller.workspace.id, campaign_id)
    status = _choice("status", [s.value for s in EnrollmentStatus])
    limit = query_limit()
    page = list_enrollments(db.session, caller.workspace.id, campaign_id=campaign.id, status=status,
                            after=_cursor_id(), limit=limit + 1)
    return jsonify({"enrollments": [enrollment_json(e) for e in page[:limit]],
                    "next_cursor": encode_cursor(str(page[limit - 1].id)) if len(page) > limit else None})


@bp.get("/enrollments/<int:enrollment_id>")
def enrollment(enrollment_id: int):
    """One enrollment with its sends and timeline."""
    caller = api_caller()
    return jsonify(enrollment_detail(db.session, get_enrollment(db.session, caller.workspace.id, enrollment_id)))


@bp.post("/enrollments/<int:enrollment_id>/remove")
def remove(enrollment_id: int):
    """Exit an enrollment (``removed``; ops); its queued attempt is cancelled."""
    caller = api_caller()
    rt = runtime()
    with write_session() as session:
        change = ops.remove_enrollment(session, caller.workspace.id, enrollment_id, role=caller.role,
                                       actor=caller.actor, now=rt.now())
        return jsonify(enrollment_json(change.subject))


# -- CSV ------------------------------------------------------------------------------------------


def import_report(report) -> dict:
    return {"import_id": report.import_id, "expires_at": iso(report.expires_at), "columns": report.columns,
            "counts": report.counts, "accepted": report.accepted, "lines": [
                {"line": line.number, "fate": fate.code, "accepted": fate.accepted, "message": fate.message,
                 "email": line.values.get("email") or None, "phone": line.values.get("phone") or None}
                for line, fate in report.lines]}


def commit_report(result) -> dict:
    return {"import_id": result.import_id, "enrolled": result.counts.get("enroll", 0), "counts": result.counts,
            "changed": [{"line": c.line, "was": c.was, "now": c.now, "message": c.message} for c in result.changed]}


@bp.post("/campaigns/<int:campaign_id>/enrollments.csv")
@takes_upload
@idempotent
def enroll_csv(campaign_id: int):
    """Enroll from a CSV file; ``?dry_run=1`` answers the per-line report and an ``import_id`` to commit."""
    caller = api_caller()
    campaign = get_campaign(db.session, caller.workspace.id, campaign_id)
    ops.check_takes_enrollments(campaign)
    data = uploaded_file()
    rt = runtime()
    checker = EnrollmentImport()
    report = dry_run(data, checker, workspace_id=caller.workspace.id, target=str(campaign.id), actor=caller.actor,
                     clock=rt.clock, policy=rt.policy)
    answer = import_report(report)
    if request.args.get("dry_run") in ("1", "true"):
        return jsonify(answer)
    answer["commit"] = commit_report(commit(report.import_id, checker, workspace_id=caller.workspace.id,
                                            target=str(campaign.id), actor=caller.actor, clock=rt.clock))
    return jsonify(answer), 201


@bp.post("/campaigns/<int:campaign_id>/imports/<import_id>/commit")
@idempotent
def commit_import(campaign_id: int, import_id: str):
    """Enroll exactly the lines the dry run accepted, re-checking each; list those whose fate changed."""
    caller = api_caller()
    campaign = get_campaign(db.session, caller.workspace.id, campaign_id)
    rt = runtime()
    result = commit(import_id, EnrollmentImport(), workspace_id=caller.workspace.id, target=str(campaign.id),
                    actor=caller.actor, clock=rt.clock)
    return jsonify(commit_report(result))


# -- contacts -------------------------------------------------------------------------------------


@bp.post("/contacts")
@idempotent
def create_contact():
    """A contact with an email and/or a phone."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, ops.CONTACT_FIELDS)
    rt = runtime()
    with write_session() as session:
        contact = ops.create_contact(session, caller.workspace.id, actor=caller.actor, now=rt.now(), **body)
        return jsonify(contact_json(contact, caller.workspace.timezone)), 201


@bp.get("/contacts")
def contacts():
    """Contacts by id; ``q`` searches email, phone and name; ``status``, ``limit``, ``cursor``."""
    caller = api_caller()
    search = request.args.get("q")
    if search is not None and len(search) > 200:
        raise InvalidInput("q is longer than 200 characters", field="q")
    status = _choice("status", [s.value for s in ContactStatus])
    limit = query_limit()
    page = list_contacts(db.session, caller.workspace.id, search=search, status=status, after=_cursor_id(),
                         limit=limit + 1)
    return jsonify({"contacts": [contact_json(c, caller.workspace.timezone) for c in page[:limit]],
                    "next_cursor": encode_cursor(str(page[limit - 1].id)) if len(page) > limit else None})


@bp.get("/contacts/<int:contact_id>")
def contact(contact_id: int):
    """One contact, with their enrollments."""
    caller = api_caller()
    found = get_contact(db.session, caller.workspace.id, contact_id)
    body = contact_json(found, caller.workspace.timezone)
    body["enrollments"] = [enrollment_json(e) for e in list_enrollments(db.session, caller.workspace.id,
                                                                         contact_id=found.id, limit=200)]
    return jsonify(body)


@bp.patch("/contacts/<int:contact_id>")
def update_contact(contact_id: int):
    """Change a contact; a new zone retimes their waiting steps."""
    caller = api_caller()
    body = json_body()
    _check_fields(body, ops.CONTACT_FIELDS)
    if not body:
        raise InvalidInput(f"nothing to change; send any of {', '.join(sorted(ops.CONTACT_FIELDS))}", code="missing")
    rt = runtime()
    with write_session() as session:
        change = ops.update_contact(session, caller.workspace.id, contact_id, changes=body, actor=caller.actor,
                                    now=rt.now())
        answer = contact_json(change.subject, caller.workspace.timezone)
    answer["retimed"] = change.counts.get("retimed", 0)
    return jsonify(answer)


@bp.post("/contacts/<int:contact_id>/unsubscribe")
def unsubscribe(contact_id: int):
    """Never send to this contact again: their enrollments exit and queued attempts are cancelled now."""
    caller = api_caller()
    rt = runtime()
    with write_session() as session:
        change = ops.unsubscribe_contact(session, caller.workspace.id, contact_id, actor=caller.actor, now=rt.now(),
                                         reason=f"unsubscribed by {caller.actor.label}")
        answer = contact_json(change.subject, caller.workspace.timezone)
    answer.update(change.counts)
    return jsonify(answer)


# -- the document -----------------------------------------------------------------------------

_TEXT_OR_NULL = {"type": ["string", "null"]}
_ID_OR_NULL = {"type": ["integer", "null"]}
_WINDOW = {"type": "object", "required": ["start", "end", "days"], "additionalProperties": False,
           "description": "when sends may go, in the contact's zone",
           "properties": {"start": {"type": "string", "pattern": r"^\d{2}:\d{2}$"},
                          "end": {"type": "string", "pattern": r"^\d{2}:\d{2}$"},
                          "days": {"type": "array", "minItems": 1, "uniqueItems": True,
                                   "items": {"enum": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]}}}}
_NEW_STEP = {"type": "object", "required": ["delay", "body"], "additionalProperties": False, "properties": {
    "id": {"type": "integer", "minimum": 1,
           "description": "an existing step of the current version, kept (on a change); once one step has its id, "
                          "a step without one is new"},
    "delay": {"type": "string", "description": "an ISO 8601 duration from the previous step: P2D, PT30M, PT0S"},
    "subject": nullable({"type": "string", "description": "required for email steps"}),
    "body": {"type": "string", "minLength": 1},
    "channel": nullable({"type": "string", "description": "a channel's name; the campaign's when null"}),
    "send_window": nullable(_WINDOW)}}
_CAMPAIGN_FIELDS = {
    "name": {"type": "string", "minLength": 1, "maxLength": MAX_NAME},
    "channel": {"type": "string", "minLength": 1, "maxLength": 63, "description": "a channel's name"},
    "steps": {"type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": _NEW_STEP},
    "send_window": nullable(_WINDOW),
    "on_failure": {"enum": [choice.value for choice in OnFailure]},
}
_COUNTS = {"type": "object", "description": "where the campaign's enrollments are at this step"}
_CAMPAIGN = ref("Campaign")
_ENROLLMENT = ref("Enrollment")
_CONTACT = ref("Contact")
_CONTACT_FIELDS = {
    "email": nullable({"type": "string", "format": "email"}),
    "phone": nullable({"type": "string", "description": "E.164, like +15555550123"}),
    "name": nullable({"type": "string", "maxLength": MAX_CONTACT_NAME}),
    "timezone": nullable({"type": "string", "description": "an IANA zone; the workspace's when null"}),
    "attributes": nullable({"type": "object", "maxProperties": MAX_ATTRIBUTES,
                            "additionalProperties": {"type": ["string", "number", "boolean", "null"]}}),
}
_IMPORT_REPORT = {
    "type": "object", "required": ["import_id", "expires_at", "columns", "counts", "accepted", "lines"],
    "properties": {
        "import_id": {"type": "string"}, "expires_at": MAYBE_INSTANT,
        "columns": {"type": "array", "items": {"type": "string"}}, "counts": {"type": "object"},
        "accepted": {"type": "integer"},
        "lines": {"type": "array", "items": {"type": "object", "required": ["line", "fate", "accepted", "message"],
                                             "properties": {"line": {"type": "integer"}, "fate": {"type": "string"},
                                                            "accepted": {"type": "boolean"},
                                                            "message": _TEXT_OR_NULL, "email": _TEXT_OR_NULL,
                                                            "phone": _TEXT_OR_NULL}}},
        "commit": ref("ImportCommit"),
    },
}
_CAMPAIGN_MOVE = ("400", "403", "404", "409", "422")

OPENAPI = {
    "schemas": {
        "Campaign": {
            "type": "object",
            "required": ["id", "name", "channel", "status", "send_window", "on_failure", "version", "steps",
                         "created_at", "updated_at"],
            "properties": {
                "id": {"type": "integer"},
                "name": {"type": "string"},
                "channel": _TEXT_OR_NULL,
                "status": {"enum": [status.value for status in CampaignStatus]},
                "send_window": nullable({"type": "object"}),
                "on_failure": {"type": "string"},
                "version": {"type": "integer"},
                "steps": {"type": "array", "items": {
                    "type": "object", "required": ["id", "position", "delay", "subject", "body", "channel",
                                                   "send_window"],
                    "properties": {"id": {"type": "integer"}, "position": {"type": "integer"},
                                   "delay": {"type": "string"}, "subject": _TEXT_OR_NULL, "body": {"type": "string"},
                                   "channel": _TEXT_OR_NULL, "send_window": nullable({"type": "object"}),
                                   "counts": _COUNTS}}},
                "older_steps": {"type": "array", "items": {"type": "object", "properties": {
                    "position": {"type": "integer"}, "counts": _COUNTS}}},
                "created_at": INSTANT,
                "updated_at": INSTANT,
                "activated_at": MAYBE_INSTANT,
                "paused_at": MAYBE_INSTANT,
                "archived_at": MAYBE_INSTANT,
                "note": _TEXT_OR_NULL,
                "retimed": {"type": "integer"},
                "followed": {"type": "object", "description": "what the move set off: sends held, minted, exited"},
            },
        },
        "NewCampaign": {"type": "object", "required": ["name", "channel", "steps"], "properties": _CAMPAIGN_FIELDS,
                        "additionalProperties": False},
        "CampaignChange": {"type": "object", "minProperties": 1, "properties": _CAMPAIGN_FIELDS,
                           "additionalProperties": False},
        "Enrollment": {
            "type": "object",
            "required": ["id", "campaign_id", "contact_id", "status", "current_step", "next_send_at", "enrolled_at"],
            "properties": {
                "id": {"type": "integer"},
                "campaign_id": {"type": "integer"},
                "contact_id": {"type": "integer"},
                "status": {"enum": [status.value for status in EnrollmentStatus]},
                "current_step": {"type": "integer"},
                "next_send_at": MAYBE_INSTANT,
                "schedule_note": _TEXT_OR_NULL,
                "enrolled_at": INSTANT,
                "completed_at": MAYBE_INSTANT,
                "exited_at": MAYBE_INSTANT,
                "exit_reason": _TEXT_OR_NULL,
                "version": {"type": "integer"},
                "sends": {"type": "array", "items": {"type": "object", "required": ["id", "step", "status"],
                                                      "properties": {
                    "id": {"type": "integer"}, "step": {"type": "integer"}, "dedupe_key": {"type": "string"},
                    "status": {"type": "string"}, "address": _TEXT_OR_NULL, "attempt_id": _ID_OR_NULL,
                    "reason": _TEXT_OR_NULL, "finished_at": MAYBE_INSTANT, "settled_at": MAYBE_INSTANT,
                    "attempts": {"type": "array", "items": {"type": "object", "properties": {
                        "id": {"type": "integer"}, "status": {"type": "string"}, "publish_at": INSTANT,
                        "rescheduled_from": _ID_OR_NULL}}}}}},
                "timeline": {"type": "array", "items": {"type": "object", "required": ["at", "kind", "what"],
                                                         "properties": {
                    "at": INSTANT, "kind": {"type": "string"}, "what": {"type": "string"},
                    "actor": _TEXT_OR_NULL, "reason": _TEXT_OR_NULL, "step": _ID_OR_NULL,
                    "action_id": _ID_OR_NULL}}},
            },
        },
        "Contact": {
            "type": "object",
            "required": ["id", "email", "phone", "name", "timezone", "attributes", "status", "created_at",
                         "updated_at"],
            "properties": {
                "id": {"type": "integer"},
                "email": _TEXT_OR_NULL,
                "phone": _TEXT_OR_NULL,
                "name": _TEXT_OR_NULL,
                "timezone": _TEXT_OR_NULL,
                "zone_note": _TEXT_OR_NULL,
                "attributes": {"type": "object"},
                "status": {"enum": [status.value for status in ContactStatus]},
                "unsubscribed_at": MAYBE_INSTANT,
                "bounced_at": MAYBE_INSTANT,
                "created_at": INSTANT,
                "updated_at": INSTANT,
                "enrollments": {"type": "array", "items": _ENROLLMENT},
                "retimed": {"type": "integer"},
                "exited": {"type": "integer"},
                "cancelled": {"type": "integer"},
            },
        },
        "NewContact": {"type": "object", "properties": _CONTACT_FIELDS, "additionalProperties": False,
                       "description": "an email, a phone, or both",
                       "anyOf": [{"required": ["email"]}, {"required": ["phone"]}]},
        "ContactChange": {"type": "object", "minProperties": 1, "properties": _CONTACT_FIELDS,
                          "additionalProperties": False},
        "ImportCommit": {"type": "object", "required": ["import_id", "enrolled", "counts", "changed"], "properties": {
            "import_id": {"type": "string"}, "enrolled": {"type": "integer"}, "counts": {"type": "object"},
            "changed": {"type": "array", "items": {"type": "object", "properties": {
                "line": {"type": "integer"}, "was": {"type": "string"}, "now": {"type": "string"},
                "message": _TEXT_OR_NULL}}}}},
    },
    "paths": {
        "/api/v1/campaigns": {
            "post": {"summary": "Create a draft campaign with its steps (honours Idempotency-Key)",
                     "parameters": [IDEMPOTENCY_KEY],
                     "requestBody": {"required": True, **json_content(ref("NewCampaign"), {
                         "name": "Welcome", "channel": "main", "steps": [
                             {"delay": "PT0S", "subject": "Welcome, {{ contact.name }}", "body": "Glad you came."},
                             {"delay": "P2D", "subject": "Two days in", "body": "Here is what to try next."}]})},
                     "responses": {"201": response_of("The draft.", _CAMPAIGN), **errors("400", "409", "413", "422")}},
            "get": {"summary": "The workspace's campaigns",
                    "responses": {"200": response_of("The campaigns.", {
                        "type": "object", "required": ["campaigns"],
                        "properties": {"campaigns": {"type": "array", "items": _CAMPAIGN}}}), **errors()}},
        },
        "/api/v1/campaigns/{campaign_id}": {
            "parameters": [row_id("campaign_id")],
            "get": {"summary": "One campaign with per-step counts",
                    "responses": {"200": response_of("The campaign.", _CAMPAIGN), **errors("404")}},
            "patch": {"summary": "Change a campaign; a structural change of an active one makes a new version",
                      "requestBody": {"required": True, **json_content(ref("CampaignChange"),
                                                                       {"on_failure": "skip"})},
                      "responses": {"200": response_of("The campaign.", _CAMPAIGN),
                                    **errors("400", "404", "409", "413", "422")}},
        },
        **{f"/api/v1/campaigns/{{campaign_id}}/{verb}": {
            "parameters": [row_id("campaign_id")],
            "post": {"summary": summary,
                     "responses": {"200": response_of("The campaign, and what the move set off.", _CAMPAIGN),
                                   **errors(*_CAMPAIGN_MOVE)}},
        } for verb, summary in (
            ("activate", "draft → active; email steps need TICKWORK_BASE_URL"),
            ("resume", "paused → active: held sends get a new attempt"),
            ("pause", "active → paused: queued attempts are cancelled"),
            ("archive", "Archive (ops): active enrollments exit"))},
        "/api/v1/campaigns/{campaign_id}/enrollments": {
            "parameters": [row_id("campaign_id")],
            "post": {"summary": "Enroll one contact; a first step due now is sent at once (honours Idempotency-Key)",
                     "parameters": [IDEMPOTENCY_KEY],
                     "requestBody": {"required": True, **json_content({
                         "type": "object", "required": ["contact_id"], "additionalProperties": False,
                         "properties": {"contact_id": {"type": "integer", "minimum": 1}}}, {"contact_id": 1})},
                     "responses": {"201": response_of("The enrollment.", _ENROLLMENT),
                                   **errors("400", "404", "409", "413", "422")}},
            "get": {"summary": "A campaign's enrollments by id",
                    "parameters": [
                        {"name": "status", "in": "query", "schema": {"enum": [s.value for s in EnrollmentStatus]}},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                        {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": response_of("A page.", page_of("enrollments", _ENROLLMENT)),
                                  **errors("404", "422")}},
        },
        "/api/v1/campaigns/{campaign_id}/enrollments.csv": {
            "parameters": [row_id("campaign_id")],
            "post": {"summary": "Enroll from a CSV file (up to 20 MiB); `dry_run=1` answers the report to commit "
                                "(honours Idempotency-Key)",
                     "parameters": [{"name": "dry_run", "in": "query", "schema": {"enum": ["1", "true", "0"]}},
                                    IDEMPOTENCY_KEY],
                     "requestBody": {"required": True, "content": {
                         "text/csv": {"schema": {"type": "string"}},
                         "multipart/form-data": {"schema": {"type": "object", "required": ["file"],
                                                            "properties": {"file": {"type": "string",
                                                                                    "format": "binary"}}}}}},
                     "responses": {"200": response_of("The dry run's per-line report.", _IMPORT_REPORT),
                                   "201": response_of("Enrolled: the report and what the commit did.", _IMPORT_REPORT),
                                   **errors("400", "404", "409", "413", "422")}},
        },
        "/api/v1/campaigns/{campaign_id}/imports/{import_id}/commit": {
            "parameters": [row_id("campaign_id"),
                           {"name": "import_id", "in": "path", "required": True, "schema": {"type": "string"}}],
            "post": {"summary": "Enroll exactly the lines the dry run accepted, re-checking each "
                                "(honours Idempotency-Key)",
                     "parameters": [IDEMPOTENCY_KEY],
                     "responses": {"200": response_of("What the commit did.", ref("ImportCommit")),
                                   **errors("404", "409", "422")}},
        },
        "/api/v1/enrollments/{enrollment_id}": {
            "parameters": [row_id("enrollment_id")],
            "get": {"summary": "One enrollment with its sends and timeline",
                    "responses": {"200": response_of("The enrollment.", _ENROLLMENT), **errors("404")}},
        },
        "/api/v1/enrollments/{enrollment_id}/remove": {
            "parameters": [row_id("enrollment_id")],
            "post": {"summary": "Exit an enrollment (ops); its queued attempt is cancelled",
                     "responses": {"200": response_of("The enrollment.", _ENROLLMENT),
                                   **errors("403", "404", "409")}},
        },
        "/api/v1/contacts": {
            "post": {"summary": "A contact with an email and/or a phone (honours Idempotency-Key)",
                     "parameters": [IDEMPOTENCY_KEY],
                     "requestBody": {"required": True, **json_content(ref("NewContact"), {
                         "email": "grace@example.com", "name": "Grace", "timezone": "Europe/Paris",
                         "attributes": {"plan": "pro"}})},
                     "responses": {"201": response_of("The contact.", _CONTACT),
                                   **errors("400", "409", "413", "422")}},
            "get": {"summary": "Contacts by id; `q` searches email, phone and name",
                    "parameters": [
                        {"name": "q", "in": "query", "schema": {"type": "string", "maxLength": 200}},
                        {"name": "status", "in": "query", "schema": {"enum": [s.value for s in ContactStatus]}},
                        {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                        {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {"200": response_of("A page.", page_of("contacts", _CONTACT)), **errors("422")}},
        },
        "/api/v1/contacts/{contact_id}": {
            "parameters": [row_id("contact_id")],
            "get": {"summary": "One contact, with their enrollments",
                    "responses": {"200": response_of("The contact.", _CONTACT), **errors("404")}},
            "patch": {"summary": "Change a contact; a new zone retimes their waiting steps",
                      "requestBody": {"required": True, **json_content(ref("ContactChange"), {"name": "Grace H."})},
                      "responses": {"200": response_of("The contact.", _CONTACT),
                                    **errors("400", "404", "409", "413", "422")}},
        },
        "/api/v1/contacts/{contact_id}/unsubscribe": {
            "parameters": [row_id("contact_id")],
            "post": {"summary": "Never send to this contact again: their enrollments exit now",
                     "responses": {"200": response_of("The contact, and what ended.", _CONTACT),
                                   **errors("404", "409")}},
        },
    },
}
