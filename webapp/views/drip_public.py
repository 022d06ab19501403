"""The drips' public routes: the unsubscribe link, and the providers' webhooks. Each proves itself
(listed in :mod:`webapp.public`); none needs a session or a CSRF token, and none says whether a
contact exists.

| route | proof | what it does |
|---|---|---|
| ``GET /unsubscribe/<workspace>/<token>`` | the signed token | a page with a button; changes nothing (mail scanners follow links) |
| ``POST /unsubscribe/<workspace>/<token>`` | the signed token | unsubscribes at once (RFC 8058 one-click: ``List-Unsubscribe=One-Click``) |
| ``POST /hooks/postmark/<channel>/<token>/bounce`` | an HMAC made with the channel's secret, in the URL | a hard bounce marks the contact bounced |
| ``POST /hooks/twilio/<channel>/inbound`` | ``X-Twilio-Signature``, keyed with the channel's auth token | STOP (and its synonyms) unsubscribes the sender |
"""

from flask import Blueprint, Response, abort, jsonify, render_template, request
from sqlalchemy import select

from models.accounts.tables import Workspace
from models.channels.tables import Channel
from models.core.database import db, write_session
from models.core.errors import InvalidInput
from models.core.moves import Actor
from models.core.runtime import runtime
from models.core.secrets_box import SecretUnreadable
from models.drips import operations as ops
from models.drips.checks import check_phone
from models.drips.tables import Contact, ContactStatus
from models.drips.unsubscribe import contact_of_token
from models.drips.webhooks import hard_bounce_email, is_stop, postmark_token_matches, twilio_signature_matches
from webapp.api.parsing import json_body
from webapp.drip_runtime import base_url
from webapp.errors import error_body

bp = Blueprint("drip_public", __name__)

NOT_VALID = "This unsubscribe link is not valid. If you copied it from an email, check that it is complete."
LINK_ACTOR = Actor(label="contact:unsubscribe link")
TWIML_EMPTY = '<?xml version="1.0" encoding="UTF-8"?><Response></Response>'


def _contact_of_link(workspace_id: int, token: str) -> Contact:
    """The contact a link names, or the same 404 whatever is wrong with it."""
    contact_id = contact_of_token(runtime().secret_box, workspace_id, token)
    contact = db.session.scalar(select(Contact).where(Contact.id == contact_id, Contact.workspace_id == workspace_id)
                                ) if contact_id else None
    if contact is None:
        abort(404, NOT_VALID)
    return contact


def _workspace_name(workspace_id: int) -> str:
    return db.session.scalar(select(Workspace.name).where(Workspace.id == workspace_id)) or ""


@bp.get("/unsubscribe/<int:workspace_id>/<token>")
def unsubscribe_page(workspace_id: int, token: str):
    """The page an unsubscribe link opens: a button to confirm; nothing changes until it is pressed."""
    contact = _contact_of_link(workspace_id, token)
    done = contact.status == ContactStatus.UNSUBSCRIBED.value
    return render_template("drips/unsubscribe.html", done=done, sender=_workspace_name(workspace_id))


@bp.post("/unsubscribe/<int:workspace_id>/<token>")
def unsubscribe(workspace_id: int, token: str):
    """Unsubscribe at once: the page's button, or a mail provider's one-click POST (RFC 8058)."""
    contact = _contact_of_link(workspace_id, token)
    with write_session() as session:
        ops.unsubscribe_contact(session, workspace_id, contact.id, actor=LINK_ACTOR, now=runtime().now(),
                                reason="unsubscribed with the link in an email")
    return render_template("drips/unsubscribe.html", done=True, sender=_workspace_name(workspace_id))


def _channel_secret(channel_id: int, kind: str) -> tuple[Channel | None, str | None]:
    channel = db.session.get(Channel, channel_id)
    if channel is None or channel.kind != kind:
        return None, None
    try:
        return channel, channel.secret(runtime().secret_box)
    except SecretUnreadable:
        return None, None


@bp.post("/hooks/postmark/<int:channel_id>/<token>/bounce")
def postmark_bounce(channel_id: int, token: str):
    """Postmark's bounce webhook for one channel: a hard bounce stops all sending to that address."""
    channel, secret = _channel_secret(channel_id, "postmark")
    if channel is None or not postmark_token_matches(channel.id, secret, token):
        return jsonify({"error": {"code": "not_found", "message": "no such webhook"}}), 404
    try:
        record = json_body()  # the one strict parser: a hostile body is a 4xx here too, never a 500
    except InvalidInput as exc:
        return jsonify(error_body(exc.code, exc.message, exc.field)), exc.status
    email = hard_bounce_email(record)
    if email is not None:
        with write_session() as session:
            contact = session.scalar(select(Contact).where(Contact.workspace_id == channel.workspace_id,
                                                           Contact.email == email))
            if contact is not None:
                ops.bounce_contact(session, contact, actor=Actor(label=f"webhook:postmark:{channel.name}"),
                                   now=runtime().now(), reason="Postmark reported a hard bounce")
    return jsonify({"ok": True})


def _twilio_url() -> str:
    """The URL Twilio signed: the public address it was configured with, this path, and any query."""
    query = request.query_string.decode()
    return (base_url() or request.host_url).rstrip("/") + request.path + (f"?{query}" if query else "")


@bp.post("/hooks/twilio/<int:channel_id>/inbound")
def twilio_inbound(channel_id: int):
    """Twilio's inbound-message webhook for one channel: STOP, STOPALL, UNSUBSCRIBE, CANCEL, END or QUIT unsubscribes."""
    channel, secret = _channel_secret(channel_id, "twilio")
    params = list(request.form.items(multi=True))
    if channel is None or not twilio_signature_matches(secret, _twilio_url(), params,
                                                       request.headers.get("X-Twilio-Signature", "")):
        return Response("signature not valid", status=403, mimetype="text/plain")
    if is_stop(request.form.get("Body")):
        try:
            phone = check_phone(request.form.get("From"))
        except InvalidInput:
            phone = None
        if phone is not None:
            with write_session() as session:
                contact = session.scalar(select(Contact).where(Contact.workspace_id == channel.workspace_id,
                                                               Contact.phone == phone))
                if contact is not None:
                    ops.unsubscribe_contact(session, channel.workspace_id, contact.id,
                                            actor=Actor(label=f"webhook:twilio:{channel.name}"), now=runtime().now(),
                                            reason=f"replied {request.form.get('Body', '').strip()[:20]} by SMS")
    return Response(TWIML_EMPTY, mimetype="text/xml")
