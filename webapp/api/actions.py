"""``/api/v1/actions``: schedule, list, inspect, cancel, reschedule and retry actions."""

from flask import Blueprint, jsonify, request

from models.actions.access import check_may_reschedule
from models.actions.reading import action_cursor, action_events, get_action, list_actions, read_action_cursor
from models.actions.scheduling import NewAction, cancel_action, create_action, reschedule_action, retry_action
from models.actions.tables import Origin, Status
from models.channels.reading import channel_by_name, channel_names
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import InvalidInput
from models.core.runtime import runtime
from webapp.api.parsing import (
    json_body,
    optional_string,
    parse_schedule_time,
    query_instant,
    query_limit,
    required_string,
)
from webapp.api.serialize import action_json
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
def create():
    """Schedule one action."""
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
    key = request.headers.get("Idempotency-Key")
    if key is not None and not (0 < len(key.strip()) <= 255):
        raise InvalidInput("Idempotency-Key must be 1 to 255 characters", field="Idempotency-Key")
    with write_session() as session:
        channel = channel_by_name(session, caller.workspace.id, channel_name)
        if channel is None:
            raise InvalidInput(f"no channel named {channel_name!r} in this workspace", field="channel",
                               code="unknown_channel")
        row, created = create_action(
            session,
            caller.workspace.id,
            NewAction(action_type=action_type, channel=channel, target_key=target_key, payload=body["payload"],
                      publish_at=publish_at, thing_id=thing_id, idempotency_key=key.strip() if key else None),
            now=rt.now(), policy=rt.policy, actor=caller.actor, origin=Origin.PERSON,
        )
        response = _one(session, row, status=201 if created else 200, note=resolved.note if resolved else None)
    if created:
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
    return _one(db.session, get_action(db.session, caller.workspace.id, action_id), events=True)


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
def reschedule(action_id: int):
    """Cancel a queued action and schedule its replacement at a new time."""
    caller = api_caller()
    check_may_reschedule(caller.role)
    body = json_body()
    rt = runtime()
    publish_at, resolved = parse_schedule_time(body, caller.workspace.timezone)
    with write_session() as session:
        row = reschedule_action(session, caller.workspace.id, action_id, publish_at, now=rt.now(),
                                policy=rt.policy, actor=caller.actor, role=caller.role, hooks=rt.hooks)
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
