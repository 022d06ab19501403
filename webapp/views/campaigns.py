"""Drip campaigns on the dashboard: the list with each campaign's funnel, the editor with a template
preview, activate / pause / resume / archive, enrolling (one contact, or a CSV file), and an
enrollment's timeline.

Every rule lives in :mod:`models.drips`; these views parse the form, call it, and render. A
refused change comes back as the page with the refusal written on it, under its own status.
"""

import json

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
from models.drips.checks import DRIP_KINDS, address_kind
from models.drips.enroll_csv import EnrollmentImport
from models.drips.reading import (
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


def _steps_from_form(form) -> list[dict]:
    """The editor's steps, in order: each kept unless its Remove box is ticked; the blank one added if filled."""
    steps = []
    count = form.get("step_count", "0")
    count = int(count) if count.isdecimal() and int(count) <= 60 else 0
    for index in range(count + 1):
        prefix = f"step-{index}-"
        if form.get(prefix + "remove"):
            continue
        body = form.get(prefix + "body")
        ident = form.get(prefix + "id", "")
        if index == count and not (body or "").strip():
            continue  # the blank step at the end, left blank
        delay = (form.get(prefix + "delay") or "").strip()
        if prefix + "wait" in form:
            delay = wait_as_iso(form.get(prefix + "wait"), form.get(prefix + "unit"), len(steps))
        step = {"delay": delay, "subject": form.get(prefix + "subject"), "body": body}
        if ident.isdecimal():
            step["id"] = int(ident)
        if form.get(prefix + "channel"):
            step["channel"] = form.get(prefix + "channel")
        window = form.get(prefix + "window")
        if window:
            try:
                step["send_window"] = json.loads(window)
            except ValueError:
                raise InvalidInput(f"step {index + 1}'s window is not readable", field=f"steps[{index}].send_window",
                                   code="bad_window") from None
        steps.append(step)
    return steps


def _campaign_fields(form) -> dict:
    return {"name": form.get("name", ""), "channel": form.get("channel", ""), "on_failure": form.get("on_failure"),
            "send_window": _window_from_form(form), "steps": _steps_from_form(form)}


def _base_url_warning(campaign_channel_kinds) -> bool:
    return not base_url() and "email" in campaign_channel_kinds


def _form_values(campaign, steps, channels: list[Channel], typed) -> tuple[dict, list[dict]]:
    """What the editor shows: what was typed (a refused save), else the campaign, else a blank draft."""
    names = {channel.id: channel.name for channel in channels}
    if typed:
        count = typed.get("step_count", "0")
        count = int(count) if count.isdecimal() and int(count) <= 60 else 0
        rows = [{"id": typed.get(f"step-{i}-id", ""), "delay": typed.get(f"step-{i}-delay", ""),
                 "subject": typed.get(f"step-{i}-subject", ""), "body": typed.get(f"step-{i}-body", ""),
                 "channel": typed.get(f"step-{i}-channel", ""), "window": typed.get(f"step-{i}-window", ""),
                 "remove": bool(typed.get(f"step-{i}-remove"))} for i in range(count)]
        top = {"name": typed.get("name", ""), "channel": typed.get("channel", ""),
               "on_failure": typed.get("on_failure", "exit"), "window_start": typed.get("window_start", ""),
               "window_end": typed.get("window_end", ""), "window_days": typed.getlist("window_days")}
        return top, rows
    if campaign is None:
        return ({"name": "", "channel": channels[0].name if channels else "", "on_failure": "exit",
                 "window_start": "09:00", "window_end": "20:00", "window_days": DAYS},
                [{"id": "", "delay": "PT0S", "subject": "", "body": "", "channel": "", "window": "", "remove": False}])
    window = campaign.send_window or {}
    top = {"name": campaign.name, "channel": names.get(campaign.channel_id, ""), "on_failure": campaign.on_failure,
           "window_start": window.get("start", ""), "window_end": window.get("end", ""),
           "window_days": window.get("days", DAYS)}
    rows = [{"id": str(step.id), "delay": step.delay, "subject": step.subject or "", "body": step.body,
             "channel": names.get(step.channel_id, "") if step.channel_id else "",
             "window": json.dumps(step.send_window) if step.send_window else "", "remove": False} for step in steps]
    return top, rows


def render_editor(campaign=None, *, error: DomainError | None = None, status: int = 200, typed: dict | None = None):
    """The campaign page (or the blank editor), with what was typed kept when a save was refused."""
    v = viewer()
    session = db.session
    channels = _drip_channels(v.workspace.id)
    context = dict(v=v, campaign=campaign, channels=channels, days=DAYS, error=error, typed=typed,
                   samples=list_contacts(session, v.workspace.id, limit=20), base_url=base_url(),
                   status_words=STATUS_WORDS, wait_parts=wait_parts, wait_words=wait_words, wait_units=WAIT_UNITS)
    if campaign is not None:
        version = current_version(session, campaign.id)
        steps = version_steps(session, version.id)
        kinds = {address_kind(session.get(Channel, step.channel_id or campaign.channel_id)) for step in steps}
        page = list_enrollments(session, v.workspace.id, campaign_id=campaign.id, limit=ENROLLMENTS_SHOWN)
        context.update(version=version, steps=steps, funnel=funnel(session, campaign.id, len(steps)),
                       enrollments=page, people=contacts_by_id(session, [e.contact_id for e in page]),
                       events=campaign_events(session, campaign.id), needs_base_url=_base_url_warning(kinds),
                       webhooks=_webhooks(campaign, steps) if v.can(Permission.ADMINISTER) else [])
    else:
        context.update(steps=[])
    context["form"], context["step_rows"] = _form_values(campaign, context["steps"], channels, typed)
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
