"""``/api/v1/actions``: schedule, list, inspect, cancel, reschedule and retry actions."""

from flask import Blueprint, current_app, jsonify, request

from models.actions.access import check_may_reschedule
from models.actions.reading import action_cursor, action_events, get_action, list_actions, read_action_cursor
from models.actions.scheduling import NewAction, cancel_action, create_action, reschedule_action, retry_action
from models.actions.tables import Origin, Status
from models.channels.reading import channel_by_name, channel_names
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import InvalidInput, NotFound
from models.core.runtime import runtime
from models.retention.reading import archived_action
from webapp.api.parsing import (
    json_body,
    optional_string,
    parse_schedule_time,
    query_instant,
    query_limit,
    required_string,
)
from webapp.api.spec import errors, json_content, row_id
from webapp.api.serialize import action_json, iso
from webapp.api.idempotency import idempotent
from webapp.auth import api_caller

bp = Blueprint("api_actions", __name__, url_prefix="/api/v1/actions")


def _one(session, row, *, events: bool = False, status: int = 200, note: str | None = None):
    channel = session.get(Channel, row.channel_id)
    body = action_json(row, channel_name=channel.name if channel else None,
                       events=action_events(session, row.id) if events else None)
    if note:
        body["note"] = note
    return jsonify(body), status


@bp.post("")
@idempotent
def create():
    """Schedule one action (honours Idempotency-Key)."""
    caller = api_caller()
    body = json_body()
    rt = runtime()
    action_type = required_string(body, "action_type", max_length=64)
    channel_name = required_string(body, "channel", max_length=63)
    target_key = required_string(body, "target_key")
    thing_id = optional_string(body, "thing_id", max_length=128)
    if "payload" not in body:
        raise InvalidInput("payload is required", field="payload", code="missing")
    publish_at, resolved = parse_schedule_time(body, caller.workspace.timezone)
    with write_session() as session:
        channel = channel_by_name(session, caller.workspace.id, channel_name)
        if channel is None:
            raise InvalidInput(f"no channel named {channel_name!r} in this workspace", field="channel",
                               code="unknown_channel")
        row = create_action(
            session,
            caller.workspace.id,
            NewAction(action_type=action_type, channel=channel, target_key=target_key, payload=body["payload"],
                      publish_at=publish_at, thing_id=thing_id),
            now=rt.now(), policy=rt.policy, actor=caller.actor, origin=Origin.PERSON,
            time_field="publish_at" if resolved is None else "local_time",
        )
        response = _one(session, row, status=201, note=resolved.note if resolved else None)
    rt.announce_due([row])
    return response


@bp.get("")
def index():
    """List actions in (publish_at, id) order, with filters and a cursor."""
    caller = api_caller()
    statuses = request.args.getlist("status")
    statuses = [part for value in statuses for part in value.split(",") if part]
    known = {s.value for s in Status}
    for value in statuses:
        if value not in known:
            raise InvalidInput(f"unknown status {value!r}; one of {', '.join(sorted(known))}", field="status")
    start, end = query_instant("from"), query_instant("to")
    if start and end and end < start:
        raise InvalidInput("to is before from", field="to")
    cursor = request.args.get("cursor")
    limit = query_limit()
    session = db.session
    rows = list_actions(session, caller.workspace.id, statuses=statuses or None, start=start, end=end,
                        after=read_action_cursor(cursor) if cursor else None, limit=limit + 1)
    names = channel_names(session, caller.workspace.id)
    page = rows[:limit]
    return jsonify({
        "actions": [action_json(row, channel_name=names.get(row.channel_id)) for row in page],
        "next_cursor": action_cursor(page[-1]) if len(rows) > limit else None,
    })


@bp.get("/<int:action_id>")
def show(action_id: int):
    """One action with its timeline."""
    caller = api_caller()
    try:
        return _one(db.session, get_action(db.session, caller.workspace.id, action_id), events=True)
    except NotFound:
        archived = archived_action(db.session, caller.workspace.id, action_id, current_app.config["TICKWORK_ARCHIVE_DIR"])
        if archived is None:
            raise
    channel = db.session.get(Channel, archived.row.channel_id)
    body = action_json(archived.row, channel_name=channel.name if channel else None, events=archived.events)
    body.update(archived=True, archive_file=archived.file, archived_at=iso(archived.archived_at))
    return jsonify(body)


@bp.post("/<int:action_id>/cancel")
def cancel(action_id: int):
    """Cancel a queued action; cancelling a cancelled one is a no-op."""
    caller = api_caller()
    rt = runtime()
    with write_session() as session:
        row = cancel_action(session, caller.workspace.id, action_id, now=rt.now(), actor=caller.actor,
                            role=caller.role)
        return _one(session, row)


@bp.post("/<int:action_id>/reschedule")
@idempotent
def reschedule(action_id: int):
    """Cancel a queued action and schedule its replacement at a new time."""
    caller = api_caller()
    check_may_reschedule(caller.role)
    body = json_body()
    rt = runtime()
    publish_at, resolved = parse_schedule_time(body, caller.workspace.timezone)
    with write_session() as session:
        row = reschedule_action(session, caller.workspace.id, action_id, publish_at, now=rt.now(),
                                policy=rt.policy, actor=caller.actor, role=caller.role, hooks=rt.hooks,
                                time_field="publish_at" if resolved is None else "local_time")
        response = _one(session, row, status=201, note=resolved.note if resolved else None)
    rt.announce_due([row])
    return response


@bp.post("/<int:action_id>/retry")
def retry(action_id: int):
    """Queue a failed action again, due now (admin only)."""
    caller = api_caller()
    rt = runtime()
    with write_session() as session:
        row = retry_action(session, caller.workspace.id, action_id, now=rt.now(), policy=rt.policy,
                           actor=caller.actor, role=caller.role, hooks=rt.hooks)
        response = _one(session, row)
    rt.announce_due([row])
    return response


# -- the document -----------------------------------------------------------------------------

_INSTANT = {"type": "string", "format": "date-time"}
_MAYBE_INSTANT = {"type": ["string", "null"], "format": "date-time"}
_LOCAL_TIME = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$",
               "description": "a wall date and time in the workspace's zone"}
_TIME_FIELDS = {
    "publish_at": {**_INSTANT, "description": "RFC 3339 with an offset; stored in UTC"},
    "local_time": _LOCAL_TIME,
}
_ONE_TIME = {"oneOf": [{"required": ["publish_at"]}, {"required": ["local_time"]}]}
_NEW_ACTION_EXAMPLE = {"action_type": "send_email", "channel": "main", "target_key": "ada@example.com",
                       "payload": {"subject": "Welcome"}, "local_time": "2027-01-05T09:00"}

OPENAPI = {
    "schemas": {
        "Action": {
            "type": "object",
            "required": ["id", "action_type", "channel", "target_key", "thing_id", "payload", "publish_at", "status",
                         "origin", "attempt_count", "created_at", "updated_at"],
            "properties": {
                "id": {"type": "integer"},
                "action_type": {"type": "string"},
                "channel": {"type": ["string", "null"]},
                "target_key": {"type": "string"},
                "thing_id": {"type": ["string", "null"]},
                "payload": {"type": "object"},
                "publish_at": _INSTANT,
                "status": {"enum": [status.value for status in Status]},
                "origin": {"type": "string"},
                "cancel_kind": {"type": ["string", "null"]},
                "attempt_count": {"type": "integer", "minimum": 0},
                "next_attempt_at": _MAYBE_INSTANT,
                "last_error": {"type": ["string", "null"]},
                "failure_code": {"type": ["string", "null"]},
                "provider_id": {"type": ["string", "null"]},
                "rescheduled_from": {"type": ["integer", "null"]},
                "submitted_at": _MAYBE_INSTANT,
                "finished_at": _MAYBE_INSTANT,
                "created_at": _INSTANT,
                "updated_at": _INSTANT,
                "note": {"type": "string", "description": "why the wall time moved (a DST gap or overlap)"},
                "archived": {"type": "boolean", "description": "read from an archive file (retention); read-only"},
                "archive_file": {"type": "string", "description": "the archive file that holds it"},
                "archived_at": _INSTANT,
                "events": {"type": "array", "items": {"type": "object", "required": ["to", "at", "actor"], "properties": {
                    "from": {"type": ["string", "null"]}, "to": {"type": "string"}, "at": _INSTANT,
                    "actor": {"type": "string"}, "reason": {"type": ["string", "null"]},
                    "clock_run_id": {"type": ["integer", "null"]}}}},
            },
        },
        "NewAction": {
            "type": "object",
            "required": ["action_type", "channel", "target_key", "payload"],
            "properties": {
                "action_type": {"type": "string", "minLength": 1, "maxLength": 64},
                "channel": {"type": "string", "minLength": 1, "maxLength": 63, "description": "a channel's name"},
                "target_key": {"type": "string", "minLength": 1, "maxLength": 255},
                "thing_id": {"type": "string", "minLength": 1, "maxLength": 128},
                "payload": {"type": "object"},
                **_TIME_FIELDS,
            },
            **_ONE_TIME,
        },
        "NewTime": {"type": "object", "properties": _TIME_FIELDS, **_ONE_TIME},
    },
    "paths": {
        "/api/v1/actions": {
            "post": {
                "summary": "Schedule an action (honours Idempotency-Key)",
                "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                                "schema": {"type": "string", "minLength": 1, "maxLength": 255}}],
                "requestBody": {"required": True, **json_content({"$ref": "#/components/schemas/NewAction"},
                                                                 _NEW_ACTION_EXAMPLE)},
                "responses": {"201": {"description": "Scheduled.",
                                      **json_content({"$ref": "#/components/schemas/Action"})},
                              **errors("400", "409", "413", "422")},
            },
            "get": {
                "summary": "List actions in (publish_at, id) order",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"type": "string"},
                     "description": "one status, or several separated by commas"},
                    {"name": "from", "in": "query", "schema": _INSTANT},
                    {"name": "to", "in": "query", "schema": _INSTANT},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "A page.", **json_content({
                    "type": "object", "required": ["actions", "next_cursor"], "properties": {
                        "actions": {"type": "array", "items": {"$ref": "#/components/schemas/Action"}},
                        "next_cursor": {"type": ["string", "null"]}}})},
                    **errors("422")},
            },
        },
        "/api/v1/actions/{action_id}": {
            "parameters": [row_id("action_id")],
            "get": {"summary": "One action with its timeline (an archived one is read from its archive file)",
                    "responses": {"200": {"description": "The action.",
                                          **json_content({"$ref": "#/components/schemas/Action"})},
                                  **errors("404")}},
        },
        "/api/v1/actions/{action_id}/cancel": {
            "parameters": [row_id("action_id")],
            "post": {"summary": "Cancel a queued action (again: a no-op)",
                     "responses": {"200": {"description": "Cancelled.",
                                           **json_content({"$ref": "#/components/schemas/Action"})},
                                   **errors("403", "404", "409")}},
        },
        "/api/v1/actions/{action_id}/reschedule": {
            "parameters": [row_id("action_id")],
            "post": {"summary": "Cancel and schedule again at a new time, with lineage (ops; honours Idempotency-Key)",
                     "parameters": [{"name": "Idempotency-Key", "in": "header", "required": False,
                                     "schema": {"type": "string", "minLength": 1, "maxLength": 255}}],
                     "requestBody": {"required": True, **json_content({"$ref": "#/components/schemas/NewTime"},
                                                                      {"local_time": "2027-01-06T10:30"})},
                     "responses": {"201": {"description": "The new row; rescheduled_from names the old.",
                                           **json_content({"$ref": "#/components/schemas/Action"})},
                                   **errors("400", "403", "404", "409", "413", "422")}},
        },
        "/api/v1/actions/{action_id}/retry": {
            "parameters": [row_id("action_id")],
            "post": {"summary": "Queue a failed action again, due now (admin)",
                     "responses": {"200": {"description": "Queued again.",
                                           **json_content({"$ref": "#/components/schemas/Action"})},
                                   **errors("403", "404", "409")}},
        },
    },
}
