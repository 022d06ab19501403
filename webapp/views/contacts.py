"""Drip contacts on the dashboard: find, add, edit, unsubscribe; each with their enrollments and history."""

from flask import Blueprint, flash, redirect, request, url_for

from models.accounts.permissions import Permission
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput
from models.core.runtime import runtime
from models.drips import operations as ops
from models.drips.reading import contact_events, get_contact, list_contacts, list_enrollments
from models.drips.schedule import contact_zone
from models.drips.tables import Campaign
from webapp.views.settings import zone_choices
from webapp.views.context import render_page, require, viewer

bp = Blueprint("contacts", __name__)

PAGE_SIZE = 50


def parse_attributes(text: str) -> dict:
    """``name = value`` lines into attributes (text values)."""
    attributes = {}
    for number, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise InvalidInput(f"Attributes line {number} should look like plan = pro.", field="attributes")
        attributes[key.strip()] = value.strip()
    return attributes


def attributes_text(attributes: dict) -> str:
    return "\n".join(f"{key} = {value}" for key, value in (attributes or {}).items())


def _fields(form) -> dict:
    return {"email": form.get("email") or None, "phone": form.get("phone") or None, "name": form.get("name") or "",
            "timezone": form.get("timezone") or None, "attributes": parse_attributes(form.get("attributes", ""))}


def render_list(*, error: DomainError | None = None, status: int = 200, typed=None):
    v = viewer()
    search = (request.args.get("q") or "").strip()[:200] or None
    after = request.args.get("after", "")
    page = list_contacts(db.session, v.workspace.id, search=search.lower() if search else None,
                         after=int(after) if after.isdecimal() and len(after) < 11 else None, limit=PAGE_SIZE + 1)
    return render_page("drips/contacts.html", v=v, zones=zone_choices(runtime().now()), contacts=page[:PAGE_SIZE],
                       search=search or "", error=error,
                       typed=typed, more=page[PAGE_SIZE - 1].id if len(page) > PAGE_SIZE else None), status


def render_contact(contact, *, error: DomainError | None = None, status: int = 200, typed=None):
    v = viewer()
    enrollments = list_enrollments(db.session, v.workspace.id, contact_id=contact.id, limit=200)
    names = {c.id: c.name for c in db.session.query(Campaign).filter(
        Campaign.id.in_({e.campaign_id for e in enrollments}))} if enrollments else {}
    _, zone_note = contact_zone(contact.timezone, v.zone)
    return render_page("drips/contact.html", v=v, zones=zone_choices(runtime().now()), contact=contact,
                       enrollments=enrollments, campaign_names=names,
                       events=contact_events(db.session, contact.id), error=error, typed=typed,
                       attributes=attributes_text(contact.attributes), zone_note=zone_note), status


@bp.get("/contacts")
@require(Permission.READ)
def index():
    """Contacts, searched by email, phone or name, with a form to add one."""
    return render_list()


@bp.post("/contacts")
@require(Permission.COMPOSE)
def create():
    """Add a contact."""
    v = viewer()
    try:
        fields = _fields(request.form)
        with write_session() as session:
            contact = ops.create_contact(session, v.workspace.id, actor=v.actor, now=runtime().now(), **fields)
    except DomainError as error:
        return render_list(error=error, status=error.status, typed=request.form)
    flash(f"Contact #{contact.id} added.")
    return redirect(url_for("contacts.detail", contact_id=contact.id), code=303)


@bp.get("/contacts/<int:contact_id>")
@require(Permission.READ)
def detail(contact_id: int):
    """A contact: addresses, zone, attributes, status, enrollments, history."""
    return render_contact(get_contact(db.session, viewer().workspace.id, contact_id))


@bp.post("/contacts/<int:contact_id>")
@require(Permission.COMPOSE)
def update(contact_id: int):
    """Save a contact's changes; a new zone retimes their waiting steps."""
    v = viewer()
    try:
        fields = _fields(request.form)
        with write_session() as session:
            change = ops.update_contact(session, v.workspace.id, contact_id, changes=fields, actor=v.actor,
                                        now=runtime().now())
    except DomainError as error:
        return render_contact(get_contact(db.session, v.workspace.id, contact_id), error=error, status=error.status,
                              typed=request.form)
    flash("Saved." + (f" {change.counts['retimed']} waiting step(s) retimed." if change.counts.get("retimed") else ""))
    return redirect(url_for("contacts.detail", contact_id=contact_id), code=303)


@bp.post("/contacts/<int:contact_id>/unsubscribe")
@require(Permission.COMPOSE)
def unsubscribe(contact_id: int):
    """Unsubscribe a contact: their enrollments end and queued sends are cancelled now."""
    v = viewer()
    with write_session() as session:
        change = ops.unsubscribe_contact(session, v.workspace.id, contact_id, actor=v.actor, now=runtime().now(),
                                         reason=f"unsubscribed by {v.actor.label}")
    flash(f"Unsubscribed: {change.counts.get('exited', 0)} enrollment(s) ended, "
          f"{change.counts.get('cancelled', 0)} queued send(s) cancelled.")
    return redirect(url_for("contacts.detail", contact_id=contact_id), code=303)
