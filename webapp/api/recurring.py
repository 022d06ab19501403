"""``/api/v1/recurring``: create, list, inspect, edit, pause, resume, end and Run Now recurring rules.

Every rule lives in :mod:`models.recurring`; these views parse the request, call it, and
answer JSON. Time fields use the actions API's ``local_time`` format (``YYYY-MM-DDTHH:MM``,
the workspace's zone); a skipped date may be a bare date.
"""

from flask import Blueprint, jsonify, request

from models.channels.reading import channel_names
from models.core.database import db, write_session
from models.core.errors import InvalidInput
from models.core.runtime import runtime
from models.recurring.checks import RULE_FIELDS, check_unknown_fields, month_day_note
from models.recurring.operations import (
    create_rule,
    end_rule,
    pause_rule,
    resume_rule,
    run_rule_now,
    update_rule,
)
from models.recurring.reading import get_rule, list_rules, local_wall, rule_events, rule_overview, rule_recurrence
from models.recurring.tables import RuleStatus
from models.timing.recurrence import Occurrence, RecurrenceError
from models.timing.wall_time import InvalidTimezone
from webapp.api.parsing import json_body, parse_instant, query_limit
from webapp.api.serialize import action_json, iso
from webapp.auth import api_caller

bp = Blueprint("api_recurring", __name__, url_prefix="/api/v1/recurring")

MAX_OCCURRENCES = 500


def occurrence_json(occurrence: Occurrence) -> dict:
    """``{"at": UTC with Z, "local": wall time with its offset, "note": DST note or null}``."""
    return {"at": iso(occurrence.instant), "local": occurrence.local.isoformat(),
            "note": occurrence.note.value if occurrence.note else None}


def _recurrence(rule, zone):
    try:
        return rule_recurrence(rule, zone, runtime().policy), None
    except InvalidTimezone as exc:
        return None, f"the workspace's time zone is not valid: {exc}"
    except RecurrenceError as exc:
        return None, f"{exc.part}: {exc.message}"


def rule_json(session, rule, zone: str, *, detail: bool = False) -> dict:
    """A rule as the API shows it, with its next 10 occurrences; with ``detail``, its rows and history."""
    now = runtime().now()
    recurrence, problem = _recurrence(rule, zone)
    names = channel_names(session, rule.workspace_id)
    overview = rule_overview(session, rule, recurrence, now=now)
    body = {
        "id": rule.id,
        "status": rule.status,
        "status_note": rule.status_note,
        "action_type": rule.action_type,
        "channel": names.get(rule.channel_id),
        "target_key": rule.target_key,
        "payload": rule.payload,
        "rrule": rule.rrule,
        "description": recurrence.describe() if recurrence else None,
        "timezone": zone,
        "starts_local": local_wall(rule.starts_local),
        "starts_at": iso(rule.starts_at),
        "ends_local": local_wall(rule.ends_local),
        "ends_at": iso(rule.ends_at),
        "exdates_local": list(rule.exdates_local or []),
        "misfire": rule.misfire,
        "revision": rule.revision,
        "last_materialized_at": iso(rule.last_materialized_at),
        "created_by": rule.created_by_id,
        "created_at": iso(rule.created_at),
        "updated_at": iso(rule.updated_at),
        "paused_at": iso(rule.paused_at),
        "ended_at": iso(rule.ended_at),
        "next_occurrences": [occurrence_json(item.occurrence) for item in overview.upcoming],
        "note": (month_day_note(recurrence) if recurrence else None) or problem,
    }
    if detail:
        body["actions"] = [action_json(row, channel_name=names.get(row.channel_id))
                           for item in overview.upcoming for row in item.rows]
        body["last_runs"] = [{**occurrence_json(item.occurrence),
                              "action": action_json(item.latest, channel_name=names.get(item.latest.channel_id))
                              if item.latest else None} for item in overview.past]
        body["manual_runs"] = [action_json(row, channel_name=names.get(row.channel_id)) for row in overview.manual]
        body["events"] = [{"from": e.from_status, "to": e.to_status, "revision": e.revision, "at": iso(e.at),
                           "actor": e.actor, "reason": e.reason, "action_id": e.action_id,
                           "clock_run_id": e.clock_run_id} for e in rule_events(session, rule.id)]
    return body


def _answer(session, change, caller, *, status: int = 200, detail: bool = True):
    body = rule_json(session, change.rule, caller.workspace.timezone, detail=detail)
    if change.counts:
        body["changes"] = {key: value for key, value in change.counts.items()}
    return jsonify(body), status


@bp.post("")
def create():
    """Create a recurring rule; its next 14 days are queued at once."""
    caller = api_caller()
    body = json_body()
    check_unknown_fields(body)
    rt = runtime()
    with write_session() as session:
        change = create_rule(session, caller.workspace.id, body, actor=caller.actor, now=rt.now(), policy=rt.policy)
        response = _answer(session, change, caller, status=201, detail=False)
    rt.announce_due(change.new_rows)
    return response


@bp.get("")
def index():
    """List the workspace's rules by id; ``status`` filters, ``cursor`` continues after a rule id."""
    caller = api_caller()
    statuses = [part for value in request.args.getlist("status") for part in value.split(",") if part]
    known = {s.value for s in RuleStatus}
    for value in statuses:
        if value not in known:
            raise InvalidInput(f"unknown status {value[:40]!r}; one of {', '.join(sorted(known))}", field="status")
    cursor = request.args.get("cursor")
    if cursor is not None and not (cursor.isdigit() and len(cursor) < 11):
        raise InvalidInput("cursor is not one this API gave out", field="cursor", code="bad_cursor")
    limit = query_limit()
    rules = list_rules(db.session, caller.workspace.id, statuses=statuses or None,
                       after_id=int(cursor) if cursor else None, limit=limit + 1)
    page = rules[:limit]
    return jsonify({
        "rules": [rule_json(db.session, rule, caller.workspace.timezone) for rule in page],
        "next_cursor": str(page[-1].id) if len(rules) > limit else None,
    })


@bp.get("/<int:rule_id>")
def show(rule_id: int):
    """One rule with its materialized rows, its last runs, its Run Nows and its history."""
    caller = api_caller()
    rule = get_rule(db.session, caller.workspace.id, rule_id)
    return jsonify(rule_json(db.session, rule, caller.workspace.timezone, detail=True))


@bp.get("/<int:rule_id>/occurrences")
def occurrences(rule_id: int):
    """The next ``count`` occurrences (up to 500) after ``after`` (RFC 3339; default now), with DST notes."""
    caller = api_caller()
    raw = request.args.get("count", "10")
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_OCCURRENCES:
        raise InvalidInput(f"count must be a whole number from 1 to {MAX_OCCURRENCES}", field="count",
                           code="bad_count")
    after = parse_instant(request.args["after"], "after") if "after" in request.args else runtime().now()
    rule = get_rule(db.session, caller.workspace.id, rule_id)
    recurrence, problem = _recurrence(rule, caller.workspace.timezone)
    if recurrence is None:
        raise InvalidInput(problem, field="timezone", code="bad_zone")
    found = [] if rule.status == RuleStatus.ENDED.value else recurrence.next_occurrences(after, int(raw))
    return jsonify({"rule_id": rule.id, "status": rule.status, "timezone": caller.workspace.timezone,
                    "after": iso(after), "occurrences": [occurrence_json(o) for o in found]})


@bp.patch("/<int:rule_id>")
def update(rule_id: int):
    """Change some of a rule's fields; an active rule's unsent future rows follow at once."""
    caller = api_caller()
    body = json_body()
    check_unknown_fields(body, RULE_FIELDS + ("revision",))
    expected = body.pop("revision", None)
    if expected is not None and (not isinstance(expected, int) or isinstance(expected, bool)):
        raise InvalidInput("revision must be a whole number", field="revision", code="wrong_type")
    if not body:
        raise InvalidInput(f"nothing to change; send any of {', '.join(RULE_FIELDS)}", code="missing")
    rt = runtime()
    with write_session() as session:
        change = update_rule(session, caller.workspace.id, rule_id, body, actor=caller.actor, now=rt.now(),
                             policy=rt.policy, expected_revision=expected)
        response = _answer(session, change, caller)
    rt.announce_due(change.new_rows)
    return response


def _optional_body() -> dict:
    raw = request.get_data(cache=True)
    return json_body() if raw.strip() else {}


@bp.post("/<int:rule_id>/pause")
def pause(rule_id: int):
    """Pause a rule (optional ``note``); its queued future rows are cancelled."""
    caller = api_caller()
    body = _optional_body()
    check_unknown_fields(body, ("note",))
    rt = runtime()
    with write_session() as session:
        change = pause_rule(session, caller.workspace.id, rule_id, note=body.get("note"), actor=caller.actor,
                            now=rt.now(), policy=rt.policy)
        return _answer(session, change, caller)


@bp.post("/<int:rule_id>/resume")
def resume(rule_id: int):
    """Resume a paused rule; the slots still in the future are queued again."""
    caller = api_caller()
    check_unknown_fields(_optional_body(), ())
    rt = runtime()
    with write_session() as session:
        change = resume_rule(session, caller.workspace.id, rule_id, actor=caller.actor, now=rt.now(),
                             policy=rt.policy)
        response = _answer(session, change, caller)
    rt.announce_due(change.new_rows)
    return response


@bp.post("/<int:rule_id>/end")
def end(rule_id: int):
    """End a rule for good (ops; optional ``note``); its queued future rows are cancelled."""
    caller = api_caller()
    body = _optional_body()
    check_unknown_fields(body, ("note",))
    rt = runtime()
    with write_session() as session:
        change = end_rule(session, caller.workspace.id, rule_id, note=body.get("note"), actor=caller.actor,
                          role=caller.role, now=rt.now(), policy=rt.policy)
        return _answer(session, change, caller)


@bp.post("/<int:rule_id>/run")
def run(rule_id: int):
    """Run Now: one row due now, beside the rule's window; answers that row."""
    caller = api_caller()
    check_unknown_fields(_optional_body(), ())
    rt = runtime()
    with write_session() as session:
        change = run_rule_now(session, caller.workspace.id, rule_id, actor=caller.actor, now=rt.now(),
                              policy=rt.policy)
        row = change.new_rows[0]
        body = action_json(row, channel_name=channel_names(session, caller.workspace.id).get(row.channel_id))
    body["rule_id"] = rule_id
    rt.announce_due(change.new_rows)
    return jsonify(body), 201
