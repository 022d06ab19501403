"""Recurring rules on the dashboard: the list, the rule builder with its live preview, a rule's page.

Every rule lives in :mod:`models.recurring`; these views turn the form into the API's fields
(the builder's choices become an RRULE through :func:`~models.recurring.checks.rrule_from_choices`,
the chosen action type's form and the advanced JSON box a payload through
:func:`~models.recurring.payload_forms.payload_from_form`), call the same operations the API
calls, and render. A refusal re-renders the form or the page with the message in place, on the
field it names, under its own status code.
"""

import json
from datetime import timedelta

from flask import Blueprint, flash, redirect, render_template, request, url_for

from models.channels.action_types import ACTION_TYPES, channel_action_types
from models.accounts.permissions import Permission
from models.channels.reading import channel_names
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.core.runtime import runtime
from models.core.time_input import parse_clock, parse_day
from models.recurring.checks import (
    ORDINALS,
    REPEATS,
    WEEKDAYS,
    check_recurrence,
    choices_from_rrule,
    month_day_note,
    rrule_from_choices,
)
from models.recurring.operations import (
    create_rule,
    current_fields,
    end_rule,
    may_end,
    pause_rule,
    resume_rule,
    run_rule_now,
    update_rule,
)
from models.recurring.reading import get_rule, list_rules, rule_events, rule_overview, rule_recurrence
from models.recurring.payload_forms import (FORMS, form_for, form_values, input_names, parse_json_box,
                                            payload_from_form)
from models.recurring.tables import Misfire
from models.timing.recurrence import RecurrenceError
from models.timing.wall_time import InvalidTimezone
from webapp.views.context import is_htmx, render_page, require, viewer

bp = Blueprint("recurring", __name__)

# Where a refusal of an API field is shown on the form.
FORM_FIELDS = {"starts_local": "start_date", "ends_local": "end_date", "exdates_local": "exdates"}
DAY_NAMES = dict(zip(WEEKDAYS, ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")))
NOTE_WORDS = {
    "shifted_by_dst_gap": "does not exist that day (clocks spring forward): moved forward by the gap",
    "first_of_repeated_hour": "happens twice that day (clocks fall back): the first one",
}


def _lines(raw) -> list[str]:
    return [line.strip() for line in (raw or "").replace(",", "\n").splitlines() if line.strip()]


def _recurrence_fields(form) -> dict:
    """The recurrence part of the builder as the API's fields; a wrong choice is a 422 naming its form field."""
    ends = form.get("ends") or "never"
    rrule = rrule_from_choices(form.get("repeat"), interval=form.get("interval"), weekdays=form.getlist("weekdays"),
                               month_day=form.get("month_day"), ordinal=form.get("ordinal"),
                               weekday=form.get("weekday"), count=form.get("count") if ends == "after" else None,
                               raw=form.get("rrule"))
    starts = f"{parse_day(form.get('start_date'), 'start_date').isoformat()}T" \
             f"{parse_clock(form.get('start_time'), 'start_time').strftime('%H:%M')}"
    fields = {"rrule": rrule, "starts_local": starts, "exdates_local": _lines(form.get("exdates")),
              "ends_local": None}
    if ends == "on":
        fields["ends_local"] = f"{parse_day(form.get('end_date'), 'end_date').isoformat()}T23:59"
    return fields


def _form_fields(form) -> dict:
    """Every field of the builder as the API's fields."""
    fields = _recurrence_fields(form)
    payload = payload_from_form(form.get("action_type"), form, form.get("payload"))
    fields.update(action_type=form.get("action_type"), channel=form.get("channel"), target_key=form.get("target_key"),
                  payload=payload, misfire=form.get("misfire"))
    return fields


def error_field(error: DomainError | None, values: dict) -> str | None:
    """The form field a refusal is shown on: a payload key on its field in the chosen type's form, unless the
    key came from the JSON box (its field left empty), then the box; an API field on the builder's own."""
    if error is None or not error.field:
        return None
    if error.field.startswith("payload."):
        key = error.field.split(".", 1)[1]
        form = form_for(values.get("action_type"))
        field = form.field(key) if form else None
        name = form.input_name(field) if field else None
        if name and not (values.get(name) or "").strip() and key in _box(values.get("payload")):
            return "payload"
        return name or "payload"
    return FORM_FIELDS.get(error.field, error.field)


def _box(text) -> dict:
    try:
        return parse_json_box(text)
    except InvalidInput:
        return {}


def _values(form=None, rule=None) -> dict:
    """What the builder shows: what was typed, else the rule, else a fresh rule starting tomorrow at 09:00."""
    if form:
        values = {key: form.get(key, "") for key in ("repeat", "interval", "month_day", "ordinal", "weekday", "rrule",
                                                     "start_date", "start_time", "ends", "end_date", "count",
                                                     "exdates", "action_type", "channel", "target_key", "payload",
                                                     "misfire", "revision", *input_names())}
        values["weekdays"] = form.getlist("weekdays")
        return values
    if rule is not None:
        fields = current_fields(db.session, rule)
        values = choices_from_rrule(rule.rrule)
        ends = "after" if values.get("count") else ("on" if rule.ends_local else "never")
        if values["repeat"] == "custom":
            values["count"], ends = "", ("on" if rule.ends_local else "never")
        typed, extra = form_values(rule.action_type, rule.payload)
        values.update(start_date=rule.starts_local.date().isoformat(), start_time=rule.starts_local.strftime("%H:%M"),
                      ends=ends, end_date=rule.ends_local.date().isoformat() if rule.ends_local else "",
                      exdates="\n".join(fields["exdates_local"]), action_type=rule.action_type,
                      channel=fields["channel"], target_key=rule.target_key,
                      payload=json.dumps(extra, indent=2, ensure_ascii=False) if extra else "", misfire=rule.misfire,
                      revision=str(rule.revision), **{**dict.fromkeys(input_names(), ""), **typed})
        return values
    v = viewer()
    tomorrow = (v.local(runtime().now()) + timedelta(days=1)).date()
    first = next(iter(_channels(v.workspace.id)), None)  # the builder's defaults agree with each other
    return {"repeat": "weekly", "interval": "1", "weekdays": [WEEKDAYS[tomorrow.weekday()]], "month_day": "1",
            "ordinal": "-1", "weekday": "FR", "rrule": "", "start_date": tomorrow.isoformat(), "start_time": "09:00",
            "ends": "never", "end_date": "", "count": "", "exdates": "",
            "action_type": channel_action_types(first)[0] if first else "send_email", "channel": first.name if first else "",
            "target_key": "", "payload": "", "misfire": Misfire.SKIP.value, "revision": "",
            **dict.fromkeys(input_names(), "")}


def preview_of(form) -> dict:
    """The next 10 occurrences the builder's choices give, with DST notes, or the refusal to show in place."""
    v = viewer()
    rt = runtime()
    try:
        fields = _recurrence_fields(form)
        recurrence, _ = check_recurrence(fields["rrule"], fields["starts_local"], zone=v.zone, now=rt.now(),
                                         policy=rt.policy, ends_local=fields["ends_local"],
                                         exdates_local=fields["exdates_local"])
    except InvalidInput as error:
        return {"error": error, "field": FORM_FIELDS.get(error.field, error.field)}
    return {"rrule": recurrence.text, "description": recurrence.describe(), "note": month_day_note(recurrence),
            "occurrences": recurrence.next_occurrences(rt.now() - timedelta(microseconds=1), 10)}


def _channels(workspace_id: int) -> list[Channel]:
    from sqlalchemy import select

    return list(db.session.scalars(select(Channel).where(Channel.workspace_id == workspace_id).order_by(Channel.name)))


def render_form(rule=None, *, error: DomainError | None = None, status: int = 200):
    """The builder (new, or a rule's page with its edit form open) with what was typed kept."""
    v = viewer()
    typed = request.form if request.method == "POST" else None
    values = _values(typed, rule)
    if rule is not None:
        return render_rule(rule, values=values, error=error, status=status, editing=True)
    return render_page("recurring/new.html", v=v, values=values, error=error,
                       error_field=error_field(error, values),
                       preview=preview_of(_as_form(values)), channels=_channels(v.workspace.id),
                       **_choices()), status


class _as_form(dict):
    """The builder's values read like a submitted form (for the first preview)."""

    def getlist(self, key):
        value = self.get(key)
        return value if isinstance(value, list) else ([value] if value else [])


def _choices() -> dict:
    return dict(repeats=REPEATS, weekdays=WEEKDAYS, day_names=DAY_NAMES, ordinals=ORDINALS,
                misfires=[m.value for m in Misfire], action_types=ACTION_TYPES, sends=channel_action_types,
                payload_forms=FORMS)


def render_rule(rule, *, values=None, error: DomainError | None = None, status: int = 200, editing: bool = False):
    """A rule's page: its definition, what it does next and did last, each row linked, its history."""
    v = viewer()
    rt = runtime()
    try:
        recurrence, problem = rule_recurrence(rule, v.zone, rt.policy), None
    except (InvalidTimezone, RecurrenceError) as exc:
        recurrence, problem = None, str(exc)
    overview = rule_overview(db.session, rule, recurrence, now=rt.now())
    values = values or _values(None, rule)
    return render_page(
        "recurring/rule.html", v=v, rule=rule, recurrence=recurrence, problem=problem, overview=overview,
        events=rule_events(db.session, rule.id), names=channel_names(db.session, v.workspace.id), values=values,
        error=error, error_field=error_field(error, values), editing=editing,
        channels=_channels(v.workspace.id), may_end=may_end(v.role), note_words=NOTE_WORDS,
        preview=preview_of(_as_form(values)) if editing else None,
        payload_text=json.dumps(rule.payload, indent=2, ensure_ascii=False, sort_keys=True), **_choices(),
    ), status


@bp.get("/recurring")
@require(Permission.READ)
def index():
    """The workspace's rules with their status and next occurrence."""
    v = viewer()
    rt = runtime()
    rows = []
    for rule in list_rules(db.session, v.workspace.id, limit=500):
        try:
            recurrence = rule_recurrence(rule, v.zone, rt.policy)
            upcoming = [] if rule.status == "ended" else recurrence.next_occurrences(rt.now(), 1)
            rows.append((rule, recurrence.describe(), upcoming[0] if upcoming else None))
        except (InvalidTimezone, RecurrenceError):
            rows.append((rule, rule.rrule, None))
    return render_page("recurring/index.html", v=v, rows=rows, names=channel_names(db.session, v.workspace.id))


@bp.get("/recurring/new")
@require(Permission.READ)
def new():
    """A blank rule builder."""
    return render_form()


@bp.get("/recurring/preview")
@require(Permission.READ)
def preview():
    """The next 10 occurrences of the builder's choices, with DST notes (htmx, as the form changes)."""
    if not is_htmx():
        return redirect(url_for("recurring.new"))
    return render_template("recurring/_preview.html", preview=preview_of(request.args), v=viewer(),
                           note_words=NOTE_WORDS)


@bp.post("/recurring")
@require(Permission.COMPOSE)
def create():
    """Save a new rule; its next 14 days are queued at once."""
    v = viewer()
    rt = runtime()
    try:
        fields = _form_fields(request.form)
        with write_session() as session:
            change = create_rule(session, v.workspace.id, fields, actor=v.actor, now=rt.now(), policy=rt.policy)
    except DomainError as error:
        return render_form(error=error, status=error.status)
    rt.announce_due(change.new_rows)
    flash(f"Saved: rule #{change.rule.id} is active; {len(change.new_rows)} occurrence(s) queued for the next "
          f"{rt.policy.recurring_window.days} days.")
    return redirect(url_for("recurring.detail", rule_id=change.rule.id), code=303)


@bp.get("/recurring/<int:rule_id>")
@require(Permission.READ)
def detail(rule_id: int):
    """A rule's page."""
    v = viewer()
    return render_rule(get_rule(db.session, v.workspace.id, rule_id), editing=request.args.get("edit") == "1")


@bp.post("/recurring/<int:rule_id>")
@require(Permission.COMPOSE)
def update(rule_id: int):
    """Save changes to a rule; its unsent future rows follow at once."""
    v = viewer()
    rt = runtime()
    raw_revision = request.form.get("revision") or ""
    try:
        fields = _form_fields(request.form)
        with write_session() as session:
            change = update_rule(session, v.workspace.id, rule_id, fields, actor=v.actor, now=rt.now(),
                                 policy=rt.policy,
                                 expected_revision=int(raw_revision) if raw_revision.isdecimal() else None)
    except DomainError as error:
        return render_form(get_rule(db.session, v.workspace.id, rule_id), error=error, status=error.status)
    rt.announce_due(change.new_rows)
    moved = change.counts.get("moved", 0)
    flash(f"Saved: rule #{rule_id} is at revision {change.rule.revision}." + (
        f" {moved} queued occurrence(s) moved." if moved else "") if change.counts else "Nothing changed.")
    return redirect(url_for("recurring.detail", rule_id=rule_id), code=303)


def _transition(rule_id: int, operation, words, **kwargs):
    v = viewer()
    rt = runtime()
    try:
        with write_session() as session:
            change = operation(session, v.workspace.id, rule_id, actor=v.actor, now=rt.now(), policy=rt.policy,
                               **kwargs)
    except DomainError as error:
        return render_rule(get_rule(db.session, v.workspace.id, rule_id), error=error, status=error.status)
    rt.announce_due(change.new_rows)
    flash(words(change))
    return redirect(url_for("recurring.detail", rule_id=rule_id), code=303)


@bp.post("/recurring/<int:rule_id>/pause")
@require(Permission.COMPOSE)
def pause(rule_id: int):
    """Pause a rule, with an optional note; its queued future occurrences are cancelled."""
    return _transition(rule_id, pause_rule, lambda c: f"Paused: {c.counts.get('cancelled', 0)} queued occurrence(s) "
                                                      "cancelled.", note=request.form.get("note"))


@bp.post("/recurring/<int:rule_id>/resume")
@require(Permission.COMPOSE)
def resume(rule_id: int):
    """Resume a paused rule; the occurrences still ahead are queued again."""
    return _transition(rule_id, resume_rule, lambda c: f"Resumed: {len(c.new_rows)} occurrence(s) queued.")


@bp.post("/recurring/<int:rule_id>/end")
@require(Permission.COMPOSE)
def end(rule_id: int):
    """End a rule for good (ops); its queued future occurrences are cancelled."""
    v = viewer()
    return _transition(rule_id, end_rule, lambda c: f"Ended: {c.counts.get('cancelled', 0)} queued occurrence(s) "
                                                    "cancelled.", note=request.form.get("note"), role=v.role)


@bp.post("/recurring/<int:rule_id>/run")
@require(Permission.COMPOSE)
def run(rule_id: int):
    """Run Now: one occurrence due now, beside the rule's window."""
    return _transition(rule_id, run_rule_now, lambda c: f"Running now as #{c.new_rows[0].id}.")

