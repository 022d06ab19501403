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
from models.recurring.checks import REQUIRED, RULE_FIELDS, check_unknown_fields, month_day_note
from models.recurring.operations import (
    create_rule,
    end_rule,
    pause_rule,
    resume_rule,
    run_rule_now,
    update_rule,
)
from models.recurring.reading import get_rule, list_rules, local_wall, rule_events, rule_overview, rule_recurrence
from models.recurring.tables import Misfire, RuleStatus
from models.timing.recurrence import Occurrence, RecurrenceError
from models.timing.wall_time import InvalidTimezone
from webapp.api.idempotency import idempotent
from webapp.api.parsing import json_body, parse_instant, query_limit
from webapp.api.serialize import action_json, iso
from webapp.api.spec import (
    INSTANT,
    IDEMPOTENCY_KEY,
    LOCAL_TIME,
    MAYBE_INSTANT,
    response_of,
    errors,
    json_content,
    nullable,
    page_of,
    ref,
    row_id,
)
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
@idempotent
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
    if cursor is not None and not (cursor.isdecimal() and len(cursor) < 11):
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
    if not raw.isdecimal() or not 1 <= int(raw) <= MAX_OCCURRENCES:
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
@idempotent
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


# -- the document -----------------------------------------------------------------------------

_ACTION = ref("Action")
_OCCURRENCE = {"type": "object", "required": ["at", "local", "note"], "properties": {
    "at": INSTANT, "local": {"type": "string", "description": "the wall time with its offset"},
    "note": {"type": ["string", "null"], "description": "a DST gap or overlap moved this occurrence"}}}
_DAY_OR_WALL = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2})?$",
                "description": "a date (the whole day) or a wall time (one occurrence)"}
_RULE_FIELDS = {
    "action_type": {"type": "string", "minLength": 1, "maxLength": 64},
    "channel": {"type": "string", "minLength": 1, "maxLength": 63, "description": "a channel's name"},
    "target_key": {"type": "string", "minLength": 1, "maxLength": 255},
    "payload": {"type": "object", "description": "may use {{ occurrence.local_date }} and "
                                                 "{{ occurrence.local_time }} in its text"},
    "rrule": {"type": "string", "minLength": 1, "description": "RFC 5545 RRULE parts, such as FREQ=WEEKLY;BYDAY=TU"},
    "starts_local": {**LOCAL_TIME, "description": "the first occurrence, in the workspace's zone"},
    "ends_local": nullable(LOCAL_TIME),
    "exdates_local": nullable({"type": "array", "items": _DAY_OR_WALL}),
    "misfire": nullable({"enum": [m.value for m in Misfire]}),
}
_RULE_ANSWER = ref("RecurringRule")
_NOTE_BODY = {"type": "object", "properties": {"note": nullable({"type": "string", "maxLength": 500})},
              "additionalProperties": False}
_EMPTY_BODY = {"type": "object", "additionalProperties": False}

OPENAPI = {
    "schemas": {
        "RecurringRule": {
            "type": "object",
            "required": ["id", "status", "action_type", "channel", "target_key", "payload", "rrule", "timezone",
                         "starts_local", "starts_at", "exdates_local", "misfire", "revision", "created_at",
                         "updated_at", "next_occurrences"],
            "properties": {
                "id": {"type": "integer"},
                "status": {"enum": [s.value for s in RuleStatus]},
                "status_note": {"type": ["string", "null"]},
                "action_type": {"type": "string"},
                "channel": {"type": ["string", "null"]},
                "target_key": {"type": "string"},
                "payload": {"type": "object"},
                "rrule": {"type": "string"},
                "description": {"type": ["string", "null"], "description": "the rule in words"},
                "timezone": {"type": "string"},
                "starts_local": {"type": ["string", "null"]},
                "starts_at": MAYBE_INSTANT,
                "ends_local": {"type": ["string", "null"]},
                "ends_at": MAYBE_INSTANT,
                "exdates_local": {"type": "array", "items": {"type": "string"}},
                "misfire": {"type": "string"},
                "revision": {"type": "integer"},
                "last_materialized_at": MAYBE_INSTANT,
                "created_by": {"type": ["integer", "null"]},
                "created_at": INSTANT,
                "updated_at": INSTANT,
                "paused_at": MAYBE_INSTANT,
                "ended_at": MAYBE_INSTANT,
                "next_occurrences": {"type": "array", "items": _OCCURRENCE},
                "note": {"type": ["string", "null"]},
                "actions": {"type": "array", "items": _ACTION},
                "last_runs": {"type": "array", "items": {**_OCCURRENCE, "properties": {
                    **_OCCURRENCE["properties"], "action": nullable(_ACTION)}}},
                "manual_runs": {"type": "array", "items": _ACTION},
                "events": {"type": "array", "items": {"type": "object", "required": ["to", "at", "actor"],
                                                       "properties": {
                    "from": {"type": ["string", "null"]}, "to": {"type": "string"},
                    "revision": {"type": ["integer", "null"]}, "at": INSTANT, "actor": {"type": "string"},
                    "reason": {"type": ["string", "null"]}, "action_id": {"type": ["integer", "null"]},
                    "clock_run_id": {"type": ["integer", "null"]}}}},
                "changes": {"type": "object", "description": "what the change did: fields changed, rows moved"},
            },
        },
        "NewRecurringRule": {"type": "object", "required": list(REQUIRED), "properties": _RULE_FIELDS,
                             "additionalProperties": False},
        "RecurringRuleChange": {"type": "object", "minProperties": 1, "additionalProperties": False,
                                "properties": {**_RULE_FIELDS, "revision": {
                                    "type": "integer", "description": "refuse the change (409) unless the rule is "
                                                                     "still at this revision"}}},
    },
    "paths": {
        "/api/v1/recurring": {
            "post": {
                "summary": "Create a recurring rule; its next 14 days are queued at once (honours Idempotency-Key)",
                "parameters": [IDEMPOTENCY_KEY],
                "requestBody": {"required": True, **json_content(ref("NewRecurringRule"), {
                    "action_type": "send_email", "channel": "main", "target_key": "team@example.com",
                    "payload": {"subject": "Standup on {{ occurrence.local_date }}"},
                    "rrule": "FREQ=WEEKLY;BYDAY=MO,WE", "starts_local": "2027-01-04T09:00"})},
                "responses": {"201": response_of("The rule, active.", _RULE_ANSWER),
                              **errors("400", "409", "413", "422")},
            },
            "get": {
                "summary": "List the workspace's rules by id",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"type": "string"},
                     "description": "one status, or several separated by commas"},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": response_of("A page.", page_of("rules", _RULE_ANSWER)), **errors("422")},
            },
        },
        "/api/v1/recurring/{rule_id}": {
            "parameters": [row_id("rule_id")],
            "get": {"summary": "One rule with its rows, last runs, Run Nows and history",
                    "responses": {"200": response_of("The rule.", _RULE_ANSWER), **errors("404")}},
            "patch": {"summary": "Change some of a rule's fields; an active rule's unsent future rows follow",
                      "requestBody": {"required": True, **json_content(ref("RecurringRuleChange"),
                                                                       {"rrule": "FREQ=WEEKLY;BYDAY=TU"})},
                      "responses": {"200": response_of("The rule.", _RULE_ANSWER),
                                    **errors("400", "404", "409", "413", "422")}},
        },
        "/api/v1/recurring/{rule_id}/occurrences": {
            "parameters": [row_id("rule_id")],
            "get": {"summary": "The rule's next occurrences, with DST notes",
                    "parameters": [
                        {"name": "count", "in": "query",
                         "schema": {"type": "integer", "minimum": 1, "maximum": MAX_OCCURRENCES}},
                        {"name": "after", "in": "query", "schema": INSTANT},
                    ],
                    "responses": {"200": response_of("The occurrences.", {
                        "type": "object", "required": ["rule_id", "status", "timezone", "after", "occurrences"],
                        "properties": {"rule_id": {"type": "integer"}, "status": {"type": "string"},
                                       "timezone": {"type": "string"}, "after": INSTANT,
                                       "occurrences": {"type": "array", "items": _OCCURRENCE}}}),
                        **errors("404", "422")}},
        },
        **{f"/api/v1/recurring/{{rule_id}}/{verb}": {
            "parameters": [row_id("rule_id")],
            "post": {"summary": summary,
                     "requestBody": {"required": False, **json_content(body)},
                     "responses": {"200": response_of("The rule.", _RULE_ANSWER),
                                   **errors("400", "403", "404", "409", "413", "422")}},
        } for verb, summary, body in (
            ("pause", "Pause a rule (optional note); its queued future rows are cancelled", _NOTE_BODY),
            ("resume", "Resume a paused rule; its future slots are queued again", _EMPTY_BODY),
            ("end", "End a rule for good (ops; optional note)", _NOTE_BODY))},
        "/api/v1/recurring/{rule_id}/run": {
            "parameters": [row_id("rule_id")],
            "post": {"summary": "Run Now: one row due now, beside the rule's window (honours Idempotency-Key)",
                     "parameters": [IDEMPOTENCY_KEY],
                     "requestBody": {"required": False, **json_content(_EMPTY_BODY)},
                     "responses": {"201": response_of("The row, with its rule's id.", {
                         "allOf": [_ACTION, {"type": "object", "required": ["rule_id"],
                                             "properties": {"rule_id": {"type": "integer"}}}]}),
                         **errors("400", "403", "404", "409", "413", "422")}},
        },
    },
}
