"""Drip campaigns on the dashboard: the list with each campaign's funnel, the editor (its steps added,
removed and moved on the page, then saved together) with a template preview, activate / pause /
resume / archive, enrolling (one contact, or a CSV file), and an enrollment's timeline.

Every rule lives in :mod:`models.drips`; these views parse the form, call it, and render. A
refused change comes back as the page with the refusal written on it, under its own status.
"""

import json
import re

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import login_required
from sqlalchemy import select

from models.timing.delay import InvalidDelay, parse_delay
from models.accounts.permissions import Permission
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.core.runtime import runtime
from models.drips import operations as ops
from models.drips.checks import DRIP_KINDS, MAX_STEPS, address_kind
from models.drips.enroll_csv import EnrollmentImport
from models.drips.reading import (
    active_at_steps,
    attempts_of,
    campaign_events,
    contacts_by_id,
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
from models.drips.tables import CampaignStatus, CampaignVersion
from models.drips.templates import SAMPLE_CONTACT, TemplateProblem, check_template, render, template_context
from models.drips.webhooks import postmark_url, twilio_url
from models.imports.runs import commit, dry_run
from models.timing.send_window import Weekday
from webapp.drip_runtime import base_url, follow, sending_context
from webapp.uploads import takes_upload
from webapp.views.context import is_htmx, render_page, require, viewer
from webapp.views.settings import zone_choices

bp = Blueprint("campaigns", __name__)

DAYS = [day.code for day in Weekday]
ENROLLMENTS_SHOWN = 50
REPORT_LINES_SHOWN = 200


def _drip_channels(workspace_id: int) -> list[Channel]:
    return list(db.session.scalars(select(Channel).where(Channel.workspace_id == workspace_id,
                                                         Channel.kind.in_(sorted(DRIP_KINDS))).order_by(Channel.name)))


def _window_from_form(form, prefix: str = "window") -> dict | None:
    """The send window typed in the editor, in the API's shape; None when both times are empty (any time)."""
    start, end = (form.get(f"{prefix}_start") or "").strip(), (form.get(f"{prefix}_end") or "").strip()
    if not start and not end:
        return None
    return {"start": start, "end": end, "days": form.getlist(f"{prefix}_days")}


# The editor's wait, as people say it: a whole number and a unit; ISO 8601 stays the API's format.
WAIT_UNITS = {"minutes": ("PT", "M", 1), "hours": ("PT", "H", 1), "days": ("P", "D", 1), "weeks": ("P", "D", 7)}


def wait_as_iso(number: str, unit: str, index: int) -> str:
    """``2`` and ``days`` as ``P2D``; a wrong number or unit is a 422 naming the step's delay."""
    number = (number or "").strip()
    if not number.isdecimal() or len(number) > 5:
        raise InvalidInput(f"step {index + 1}'s wait must be a whole number, such as 2", field=f"steps[{index}].delay",
                           code="bad_delay")
    if unit not in WAIT_UNITS:
        raise InvalidInput(f"step {index + 1}'s wait is counted in minutes, hours, days or weeks",
                           field=f"steps[{index}].delay", code="bad_delay")
    prefix, letter, times = WAIT_UNITS[unit]
    return "PT0S" if int(number) == 0 else f"{prefix}{int(number) * times}{letter}"


def wait_parts(iso: str) -> tuple[str, str] | None:
    """``P2D`` as ``("2", "days")`` for the editor's number and unit; None when one unit cannot say it."""
    try:
        delay = parse_delay(iso)
    except InvalidDelay:
        return None
    if delay.is_immediate:
        return "0", "minutes"
    seconds = int(delay.elapsed.total_seconds())
    if delay.calendar_days and not seconds:
        days = delay.calendar_days
        return (str(days // 7), "weeks") if days % 7 == 0 else (str(days), "days")
    if not delay.calendar_days and seconds % 60 == 0:
        return (str(seconds // 3600), "hours") if seconds % 3600 == 0 else (str(seconds // 60), "minutes")
    return None


def wait_words(iso: str, index: int) -> str:
    """A funnel row's wait: "2 days later", "at enrolment", never ``P2D``."""
    try:
        delay = parse_delay(iso)
    except InvalidDelay:
        return iso
    if delay.is_immediate:
        return "at enrolment" if index == 0 else "right after the previous step"
    return f"{delay.in_words} after enrolment" if index == 0 else f"{delay.in_words} later"


STEP_PARTS = {"delay": "wait", "send_window": "send window", "id": "place"}
_STEP_FIELD = re.compile(r"^steps\[(\d+)\](?:\.(\w+))?")
_STEP_NAMES = re.compile(r"\bsteps\[(\d+)\](?:\.(\w+))?")
_FOCUSABLE = re.compile(r"^step-\d{1,3}-(?:wait|unit|delay|channel|subject|body)$")


def step_words(message: str) -> str:
    """A refusal as the editor says it: ``steps[1].delay is ...`` as "Step 2's wait is ..."."""
    def say(found) -> str:
        step = f"step {int(found.group(1)) + 1}"
        return f"{step}'s {STEP_PARTS.get(found.group(2), found.group(2))}" if found.group(2) else step
    words = _STEP_NAMES.sub(say, message)
    return words[:1].upper() + words[1:] if message.startswith("steps[") else words


def error_place(error: DomainError | None) -> tuple[int | None, str | None]:
    """Which step (its index) and which of its parts a refusal concerns, from its field."""
    found = _STEP_FIELD.match((error.field or "") if error is not None else "")
    return (int(found.group(1)), found.group(2)) if found else (None, None)


def _row_count(form) -> int:
    # One more than a campaign may have, so too many rows are refused by the model, in its words.
    count = form.get("step_count", "0")
    return min(int(count), MAX_STEPS + 1) if count.isdecimal() and len(count) < 4 else 0


def _rows_from_form(form) -> list[dict]:
    """The editor's steps exactly as typed, in their order on the page."""
    rows = []
    for index in range(_row_count(form)):
        prefix = f"step-{index}-"
        row = {"id": form.get(prefix + "id", ""), "subject": form.get(prefix + "subject", ""),
               "body": form.get(prefix + "body", ""), "channel": form.get(prefix + "channel", ""),
               "window": form.get(prefix + "window", ""), "wait": None, "unit": None, "delay": ""}
        if prefix + "wait" in form:
            row["wait"], row["unit"] = form.get(prefix + "wait", ""), form.get(prefix + "unit", "")
        else:  # a wait one unit cannot say, typed as ISO 8601
            row["delay"] = form.get(prefix + "delay", "")
        rows.append(row)
    return rows


def _row_of_step(step, names: dict[int, str]) -> dict:
    parts = wait_parts(step.delay)
    return {"id": str(step.id), "subject": step.subject or "", "body": step.body,
            "channel": names.get(step.channel_id, "") if step.channel_id else "",
            "window": json.dumps(step.send_window) if step.send_window else "",
            "wait": parts[0] if parts else None, "unit": parts[1] if parts else None,
            "delay": "" if parts else step.delay}


def _blank_row(first: bool) -> dict:
    return {"id": "", "subject": "", "body": "", "channel": "", "window": "", "wait": "0" if first else "1",
            "unit": "minutes" if first else "days", "delay": ""}


def _row_id(row: dict) -> int | None:
    return int(row["id"]) if row["id"].isdecimal() and len(row["id"]) < 11 else None


def _step_of_row(row: dict, index: int) -> dict:
    """One row as the API's step: ``delay`` in ISO 8601, its ``id`` when it is a saved step."""
    delay = row["delay"].strip() if row["wait"] is None else wait_as_iso(row["wait"], row["unit"], index)
    step = {"delay": delay, "subject": row["subject"], "body": row["body"]}
    if _row_id(row) is not None:
        step["id"] = _row_id(row)
    if row["channel"]:
        step["channel"] = row["channel"]
    if row["window"]:
        try:
            step["send_window"] = json.loads(row["window"])
        except ValueError:
            raise InvalidInput(f"step {index + 1}'s window is not readable", field=f"steps[{index}].send_window",
                               code="bad_window") from None
    return step


def _campaign_fields(form) -> dict:
    return {"name": form.get("name", ""), "channel": form.get("channel", ""), "on_failure": form.get("on_failure"),
            "send_window": _window_from_form(form),
            "steps": [_step_of_row(row, index) for index, row in enumerate(_rows_from_form(form))]}


def apply_step_op(rows: list[dict], op: str) -> tuple[str | None, str | None]:
    """Add, remove or move one row of the editor (nothing is stored); the control to focus next and what to say.

    ``op`` is ``add``, ``remove:I``, ``up:I`` or ``down:I`` (I the row's index); anything else
    (``refresh``: a channel changed) changes no row.
    """
    verb, _, where = op.partition(":")
    if verb == "add":
        if len(rows) >= MAX_STEPS:
            raise InvalidInput(f"a campaign has at most {MAX_STEPS} steps", field="steps", code="too_many")
        rows.append(_blank_row(first=not rows))
        return f"step-{len(rows) - 1}-wait", f"Step {len(rows)} added at the end; nothing is saved until you save."
    if verb not in ("remove", "up", "down"):
        return None, None
    if not where.isdecimal() or int(where) >= len(rows):
        raise InvalidInput("that step is no longer on the page; nothing was changed", field="steps",
                           code="unknown_step")
    index = int(where)
    if verb == "remove":
        if len(rows) == 1:
            raise InvalidInput("a campaign needs at least one step: add another before removing this one",
                               field="steps", code="missing")
        rows.pop(index)
        # The keyboard goes to the Remove button that took its place; the last step left has none that works.
        focus = "step-add" if len(rows) == 1 else f"step-{min(index, len(rows) - 1)}-remove"
        return focus, f"Step {index + 1} removed; nothing is saved until you save."
    other = index - 1 if verb == "up" else index + 1
    if not 0 <= other < len(rows):
        raise InvalidInput(f"step {index + 1} is already {'first' if verb == 'up' else 'last'}", field="steps",
                           code="cannot_move")
    rows[index], rows[other] = rows[other], rows[index]
    # The moved step keeps the keyboard: on the same button, or the other one once it reaches an end.
    at_end = other == 0 if verb == "up" else other == len(rows) - 1
    focus = f"step-{other}-{('down' if verb == 'up' else 'up') if at_end else verb}"
    return focus, f"Step {index + 1} moved {verb}: it is step {other + 1} now; nothing is saved until you save."


def _base_url_warning(campaign_channel_kinds) -> bool:
    return not base_url() and "email" in campaign_channel_kinds


def _form_values(campaign, steps, channels: list[Channel], typed) -> tuple[dict, list[dict]]:
    """What the editor shows: what was typed (a refused save), else the campaign, else a blank draft."""
    names = {channel.id: channel.name for channel in channels}
    if typed:
        top = {"name": typed.get("name", ""), "channel": typed.get("channel", ""),
               "on_failure": typed.get("on_failure", "exit"), "window_start": typed.get("window_start", ""),
               "window_end": typed.get("window_end", ""), "window_days": typed.getlist("window_days")}
        return top, _rows_from_form(typed)
    if campaign is None:
        return ({"name": "", "channel": channels[0].name if channels else "", "on_failure": "exit",
                 "window_start": "09:00", "window_end": "20:00", "window_days": DAYS}, [_blank_row(first=True)])
    window = campaign.send_window or {}
    top = {"name": campaign.name, "channel": names.get(campaign.channel_id, ""), "on_failure": campaign.on_failure,
           "window_start": window.get("start", ""), "window_end": window.get("end", ""),
           "window_days": window.get("days", DAYS)}
    return top, [_row_of_step(step, names) for step in steps]


def _steps_context(campaign, version, steps, rows: list[dict], campaign_channel: str, channels: list[Channel],
                   error: DomainError | None) -> dict:
    """What the step list shows beside the rows: each row's address kind (its template fields) and, once the
    campaign has been active, who is at each saved step and whether saving makes a new version."""
    kinds = {channel.name: address_kind(channel) for channel in channels}
    at_steps = active_at_steps(db.session, version.id) if version is not None else {}
    position = {step.id: step.position for step in steps}
    for row in rows:
        row["kind"] = kinds.get(row["channel"] or campaign_channel, "email")
        row["waiting"] = at_steps.get(position.get(_row_id(row)), 0)
    live = campaign is not None and campaign.status in (CampaignStatus.ACTIVE.value, CampaignStatus.PAUSED.value)
    restructured = live and ops.steps_restructured([step.id for step in steps], [_row_id(row) for row in rows])
    error_step, error_part = error_place(error)
    return dict(step_rows=rows, restructured=restructured, under_way=sum(at_steps.values()) if live else 0,
                error_step=error_step, error_part=error_part,
                editable=campaign is None or campaign.status != CampaignStatus.ARCHIVED.value,
                steps_url=url_for("campaigns.steps", campaign_id=campaign.id) if campaign else url_for(
                    "campaigns.new_steps"))


def _error_focus(error: DomainError | None, rows: list[dict]) -> str | None:
    """The control a refused save puts the keyboard on: the step's field the refusal names."""
    index, part = error_place(error)
    if index is None or index >= len(rows):
        return None
    if part == "delay":
        return f"step-{index}-{'delay' if rows[index]['wait'] is None else 'wait'}"
    if part == "subject" and rows[index].get("kind") == "phone":
        return f"step-{index}-body"
    return f"step-{index}-{part}" if part in ("subject", "body", "channel") else None


def render_editor(campaign=None, *, error: DomainError | None = None, status: int = 200, typed: dict | None = None,
                  rows: list[dict] | None = None, focus: str | None = None, said: str | None = None,
                  fragment: bool = False):
    """The campaign page (or the blank editor), with what was typed kept when a save was refused.

    ``rows`` are the steps as the editor holds them after adding, removing or moving one;
    ``fragment`` renders the step list alone, for htmx to swap.
    """
    v = viewer()
    session = db.session
    channels = _drip_channels(v.workspace.id)
    context = dict(v=v, campaign=campaign, channels=channels, days=DAYS, error=error,
                   samples=list_contacts(session, v.workspace.id, limit=20), base_url=base_url(),
                   status_words=STATUS_WORDS, wait_words=wait_words, wait_units=WAIT_UNITS,
                   step_words=step_words, version=None, max_steps=MAX_STEPS)
    if campaign is not None:
        version = current_version(session, campaign.id)
        steps = version_steps(session, version.id)
        context.update(version=version, steps=steps)
        if not fragment:
            kinds = {address_kind(session.get(Channel, step.channel_id or campaign.channel_id)) for step in steps}
            page = list_enrollments(session, v.workspace.id, campaign_id=campaign.id, limit=ENROLLMENTS_SHOWN)
            context.update(funnel=funnel(session, campaign.id, len(steps)), enrollments=page,
                           people=contacts_by_id(session, [e.contact_id for e in page]),
                           events=campaign_events(session, campaign.id), needs_base_url=_base_url_warning(kinds),
                           webhooks=_webhooks(campaign, steps) if v.can(Permission.ADMINISTER) else [],
                           zones=zone_choices(runtime().now()))
    else:
        context.update(steps=[])
    context["form"], typed_rows = _form_values(campaign, context["steps"], channels, typed)
    rows = typed_rows if rows is None else rows
    context.update(_steps_context(campaign, context["version"], context["steps"], rows, context["form"]["channel"],
                                  channels, error))
    context.update(focus=focus or _error_focus(error, rows), said=said)
    if fragment:
        return render_template("drips/_steps.html", **context), status
    return render_page("drips/campaign.html", **context), status


def _webhooks(campaign, steps) -> list[tuple[str, str]]:
    """The webhook URLs an admin configures at the providers of this campaign's channels."""
    if not base_url():
        return []
    found = []
    for channel_id in {campaign.channel_id} | {step.channel_id for step in steps if step.channel_id}:
        channel = db.session.get(Channel, channel_id)
        try:
            secret = channel.secret(runtime().secret_box)
        except Exception:  # an unreadable secret: the channels page says so
            secret = None
        if channel.kind == "postmark" and secret:
            found.append((f"{channel.name}: Postmark bounce webhook", postmark_url(base_url(), channel.id, secret)))
        if channel.kind == "twilio":
            found.append((f"{channel.name}: Twilio inbound messages", twilio_url(base_url(), channel.id)))
    return found


@bp.get("/campaigns")
@require(Permission.READ)
def index():
    """Every campaign with its status and per-step funnel."""
    v = viewer()
    session = db.session
    rows = []
    for campaign in list_campaigns(session, v.workspace.id):
        steps = version_steps(session, current_version(session, campaign.id).id)
        rows.append((campaign, steps, funnel(session, campaign.id, len(steps))))
    return render_page("drips/campaigns.html", v=v, rows=rows, wait_words=wait_words)


@bp.get("/campaigns/new")
@require(Permission.READ)
def new():
    """A blank campaign editor."""
    return render_editor()


@bp.post("/campaigns")
@require(Permission.COMPOSE)
def create():
    """Save a new campaign as a draft."""
    v = viewer()
    rt = runtime()
    try:
        fields = _campaign_fields(request.form)
        with write_session() as session:
            campaign = ops.create_campaign(session, v.workspace.id, actor=v.actor, now=rt.now(), **fields)
    except DomainError as error:
        return render_editor(error=error, status=error.status, typed=request.form)
    flash(f"Saved: campaign {campaign.name} is a draft.")
    return redirect(url_for("campaigns.detail", campaign_id=campaign.id), code=303)


@bp.get("/campaigns/<int:campaign_id>")
@require(Permission.READ)
def detail(campaign_id: int):
    """A campaign: its funnel, its editor, enrolling, its enrollments."""
    return render_editor(get_campaign(db.session, viewer().workspace.id, campaign_id))


@bp.post("/campaigns/<int:campaign_id>")
@require(Permission.COMPOSE)
def update(campaign_id: int):
    """Save changes to a campaign and its steps."""
    v = viewer()
    rt = runtime()
    try:
        fields = _campaign_fields(request.form)
        with write_session() as session:
            change = ops.update_campaign(session, v.workspace.id, campaign_id, changes=fields, actor=v.actor,
                                         now=rt.now())
    except DomainError as error:
        return render_editor(get_campaign(db.session, v.workspace.id, campaign_id), error=error, status=error.status,
                             typed=request.form)
    flash("Saved." + (f" {change.note}" if change.note else "")
          + (f" {change.counts['retimed']} waiting step(s) retimed." if change.counts.get("retimed") else ""))
    return redirect(url_for("campaigns.detail", campaign_id=campaign_id), code=303)


def _steps_answer(campaign):
    """The editor's steps after one is added, removed or moved: nothing is stored until Save."""
    rows = _rows_from_form(request.form)
    op = request.form.get("step_op", "")
    try:
        focus, said = apply_step_op(rows, op)
    except DomainError as error:
        return render_editor(campaign, typed=request.form, rows=rows, error=error, status=error.status,
                             fragment=is_htmx())
    if op == "refresh":  # a channel changed: the template fields follow its kind; the keyboard stays put
        focus = request.form.get("focus", "")
        focus = focus if _FOCUSABLE.match(focus) else None
    return render_editor(campaign, typed=request.form, rows=rows, focus=focus, said=said, fragment=is_htmx())


@bp.post("/campaigns/new/steps")
@require(Permission.COMPOSE)
def new_steps():
    """A new campaign's editor with one step added, removed or moved (htmx: the step list alone)."""
    return _steps_answer(None)


@bp.post("/campaigns/<int:campaign_id>/steps")
@require(Permission.COMPOSE)
def steps(campaign_id: int):
    """A campaign's editor with one step added, removed or moved (htmx: the step list alone)."""
    return _steps_answer(get_campaign(db.session, viewer().workspace.id, campaign_id))


def _move(campaign_id: int, operation, verb: str, **kwargs):
    v = viewer()
    rt = runtime()
    try:
        with write_session() as session:
            operation(session, v.workspace.id, campaign_id, actor=v.actor, now=rt.now(), **kwargs)
    except DomainError as error:
        return render_editor(get_campaign(db.session, v.workspace.id, campaign_id), error=error, status=error.status)
    done = follow(campaign_id, v.actor)
    words = {"held": "send(s) held", "reminted": "held send(s) sent again", "exited_archived": "enrollment(s) ended"}
    flash(verb + "".join(f" {n} {words[key]}." for key, n in done.items() if key in words and n))
    return redirect(url_for("campaigns.detail", campaign_id=campaign_id), code=303)


@bp.post("/campaigns/<int:campaign_id>/activate")
@require(Permission.COMPOSE)
def activate(campaign_id: int):
    """Activate a draft, or resume a paused campaign."""
    return _move(campaign_id, ops.activate_campaign, "Active.", base_url=base_url())


@bp.post("/campaigns/<int:campaign_id>/pause")
@require(Permission.COMPOSE)
def pause(campaign_id: int):
    """Pause: nothing is minted, queued sends are held."""
    return _move(campaign_id, ops.pause_campaign, "Paused.")


@bp.post("/campaigns/<int:campaign_id>/archive")
@require(Permission.OPERATE)
def archive(campaign_id: int):
    """Archive for good: active enrollments end."""
    return _move(campaign_id, ops.archive_campaign, "Archived.", role=viewer().role)


@bp.post("/campaigns/preview")
@require(Permission.COMPOSE)
def preview():
    """A step's subject and body rendered for a sample contact, or the template's error."""
    v = viewer()
    raw = request.form.get("contact_id", "")
    sample = SAMPLE_CONTACT
    if raw.isdecimal():
        try:
            sample = get_contact(db.session, v.workspace.id, int(raw))
        except DomainError:
            sample = SAMPLE_CONTACT
    step = request.form.get("step", "")
    context = template_context(sample, campaign_name=request.form.get("name") or "Your campaign",
                               step_number=int(step) + 1 if step.isdecimal() and len(step) < 4 else 1,
                               unsubscribe_url=(base_url() or "https://tickwork.example") + "/unsubscribe/…")
    result = {"subject": None, "body": None, "error": None}
    status = 200
    try:
        for part in ("subject", "body"):
            source = request.form.get(f"step-{step}-{part}", request.form.get(part)) or ""
            if source.strip():
                check_template(source, part)
                result[part] = render(source, context)
    except (InvalidInput, TemplateProblem) as problem:
        result["error"] = problem.message
        # Over the rendering budget is refused outright; any other mistake is the template's to show.
        if getattr(problem, "over_budget", False) or getattr(problem, "code", None) == "over_budget":
            status = 422
    if not is_htmx():
        return redirect(url_for("campaigns.index"))
    return render_template("drips/_preview.html", result=result, v=v), status


@bp.post("/campaigns/<int:campaign_id>/enrollments")
@require(Permission.COMPOSE)
def enroll(campaign_id: int):
    """Enroll a contact, chosen by id or by email."""
    v = viewer()
    rt = runtime()
    try:
        contact_id = _contact_from_form(v.workspace.id)
        with write_session() as session:
            change = ops.enroll(session, v.workspace.id, campaign_id, contact_id, actor=v.actor, now=rt.now(),
                                ctx=sending_context(v.actor))
    except DomainError as error:
        return render_editor(get_campaign(db.session, v.workspace.id, campaign_id), error=error, status=error.status)
    rt.announce_due(change.new_rows)
    flash(f"Enrolled as #{change.subject.id}." + (f" {change.note}" if change.note else ""))
    return redirect(url_for("campaigns.detail", campaign_id=campaign_id), code=303)


def _contact_from_form(workspace_id: int) -> int:
    raw = (request.form.get("contact") or "").strip()
    if raw.isdecimal():
        return int(raw)
    found = list_contacts(db.session, workspace_id, search=raw.lower(), limit=2) if raw else []
    exact = [c for c in found if c.email == raw.lower() or c.phone == raw]
    if len(exact) == 1:
        return exact[0].id
    if not raw:
        raise InvalidInput("Give a contact's id, email or phone.", field="contact", code="missing")
    what = "email" if "@" in raw else ("phone" if raw.lstrip("+").replace(" ", "").isdecimal() else "id, email or phone")
    raise InvalidInput(f"No contact has the {what} {raw[:100]}; add them under Contacts first, or check for a typo.",
                       field="contact", code="unknown_contact")


@bp.post("/campaigns/<int:campaign_id>/upload")
@require(Permission.COMPOSE)
@takes_upload
def upload(campaign_id: int):
    """A CSV file's dry run: every line's fate, and a button to enroll the accepted ones."""
    v = viewer()
    rt = runtime()
    campaign = get_campaign(db.session, v.workspace.id, campaign_id)
    try:
        ops.check_takes_enrollments(campaign)
        upload = request.files.get("file")
        if upload is None or not upload.filename:
            raise InvalidInput("Choose a CSV file to upload.", field="file", code="missing")
        report = dry_run(upload.read(), EnrollmentImport(), workspace_id=v.workspace.id, target=str(campaign.id),
                         actor=v.actor, clock=rt.clock, policy=rt.policy)
    except DomainError as error:
        return render_editor(campaign, error=error, status=error.status)
    return render_page("drips/import.html", v=v, campaign=campaign, report=report, shown=REPORT_LINES_SHOWN)


@bp.post("/campaigns/<int:campaign_id>/imports/<import_id>/commit")
@require(Permission.COMPOSE)
def commit_upload(campaign_id: int, import_id: str):
    """Enroll exactly the lines the dry run accepted, each re-checked."""
    v = viewer()
    rt = runtime()
    campaign = get_campaign(db.session, v.workspace.id, campaign_id)
    try:
        result = commit(import_id, EnrollmentImport(), workspace_id=v.workspace.id, target=str(campaign.id),
                        actor=v.actor, clock=rt.clock)
    except DomainError as error:
        return render_editor(campaign, error=error, status=error.status)
    return render_page("drips/import.html", v=v, campaign=campaign, result=result, report=None,
                       shown=REPORT_LINES_SHOWN)


@bp.get("/enrollments/<int:enrollment_id>")
@login_required
def enrollment(enrollment_id: int):
    """An enrollment's timeline: its moves, its sends, and every attempt's status changes."""
    v = viewer()
    session = db.session
    found = get_enrollment(session, v.workspace.id, enrollment_id)
    sends = enrollment_sends(session, found.id)
    return render_page("drips/enrollment.html", v=v, enrollment=found,
                       campaign=get_campaign(session, v.workspace.id, found.campaign_id),
                       contact=get_contact(session, v.workspace.id, found.contact_id),
                       version=session.get(CampaignVersion, found.version_id), sends=sends,
                       attempts=attempts_of(session, v.workspace.id, sends),
                       timeline=enrollment_timeline(session, found))


@bp.post("/enrollments/<int:enrollment_id>/remove")
@require(Permission.OPERATE)
def remove(enrollment_id: int):
    """End an enrollment (removed); its queued send is cancelled."""
    v = viewer()
    rt = runtime()
    with write_session() as session:
        ops.remove_enrollment(session, v.workspace.id, enrollment_id, role=v.role, actor=v.actor, now=rt.now())
    flash(f"Enrollment #{enrollment_id} removed.")
    return redirect(url_for("campaigns.enrollment", enrollment_id=enrollment_id), code=303)


STATUS_WORDS = {
    CampaignStatus.DRAFT.value: "A draft: nobody can be enrolled until it is activated.",
    CampaignStatus.ACTIVE.value: "Active: each enrollment's steps go out when due, in the contact's send window.",
    CampaignStatus.PAUSED.value: "Paused: nothing goes out; queued sends are held until it resumes.",
    CampaignStatus.ARCHIVED.value: "Archived: finished for good; every enrollment has ended.",
}
