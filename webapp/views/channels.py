"""Channels (admin): add, edit, connect, test-send. Secrets are write-only: typed in (or obtained by
connecting an account), never shown again. Posting times (the queue's slots): ops and admins, on the
posting-times page and on each channel's page."""

from flask import Blueprint, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user
from sqlalchemy import select

from models.accounts.permissions import Permission
from models.accounts.members import membership_role
from models.accounts.tables import Role, User
from models.channels import connections
from models.overview.channel_health import channel_health
from models.channels.slots import save_slots
from models.channels.tables import Channel
from models.posts.access import check_may_set_posting_times
from models.timing.slot_grid import WEEKDAYS
from models.channels.operations import read_from_network, save_channel
from models.channels.reading import channel_events
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput, NotFound
from models.channels.providers import PROVIDERS, Delivery, SendContext, SendOutcome, send_alone, smtp
from models.channels.providers.http import http_client
from models.clock.settling import unknown_outcome_rule
from models.core.runtime import runtime
from models.core.moves import Actor
from webapp.views.context import is_htmx, render_page, require, viewer

bp = Blueprint("channels", __name__)

# The settings each kind reads, shown as a hint beside the settings box. Every kind but
# log also takes the limits (models.channels.limits): its default is said beside it.
SETTINGS_HINT = {
    "log": "",
    "webhook": "url = https://example.com/hook\n# rate = 20/s    (default: none)\n# concurrency = 8",
    "smtp": "host = smtp.example.com\nport = 587\nfrom = news@example.com\nusername = news\n"
            "# security = starttls    (default; ssl, or none on a network you trust)\n"
            "# ca_file = /etc/ssl/certs/relay-ca.pem    (a relay with its own CA: trust only that)\n"
            "# tls_verify = false    (DANGER: no certificate check at all)\n"
            "# rate = 600/min    (default: none)\n# concurrency = 4",
    "postmark": "from = news@example.com\nmessage_stream = outbound\n# rate = 50/s    (default: none)",
    "twilio": "account_sid = AC...\nfrom = +15555550100\n"
              "# rate = 1/s    (default: a long code's 1/s; 3/s toll-free, more for short codes)",
    "mastodon": "url = https://mastodon.example\nvisibility = public\n"
                "# rate = 60/min    (default: 300 requests per 5 minutes per account)",
    "x": "# url = https://api.x.com    (default)\n# rate = 6/min    (default: 100 posts per 15 minutes per user)",
    "linkedin": "author = urn:li:person:...    (or urn:li:organization:... for a page)\n"
                "# linkedin_version = 202601    (default: TICKWORK_LINKEDIN_VERSION)",
    "threads": "# url = https://graph.threads.net/v1.0\nuser_id = me\n# rate = none    (default: 250 posts per 24 h)",
    "facebook": "# url = https://graph.facebook.com/v21.0\npage_id = 1234567890",
    "instagram": "# url = https://graph.instagram.com/v21.0\nig_user_id = me\n"
                 "# network_rate = 100/86400s    (read from Instagram when the channel is saved)",
    "bluesky": "handle = acme.bsky.social\n# url = https://bsky.social    (the PDS)\n"
               "# rate = 8/min    (default: 35,000 points a day, a post is 3)\n# secret: an app password",
    "discord": "# the webhook's URL without its token: the token is the secret\n"
               "url = https://discord.com/api/webhooks/ID\n"
               "# allowed_mentions = users, roles    (default: a post pings nobody)\n"
               "# rate = 30/min    (default: a webhook's 30 requests a minute)",
    "slack": "channel = C0123456789\n# unfurl_links = false\n"
             "# rate = 1/s    (default: chat.postMessage's 1/s per channel)",
    "telegram": "chat_id = -1001234567890\n# chat_id = @channelname    (a public channel)\n"
                "# rate = 1/s    (default: 20/min, a group's limit; 1/s for a private chat)",
}
LIMITS_HINT = ("rate = N/s or N/min, concurrency = N (sends in flight), across every consumer; "
               "none lifts a kind's default. A provider's Retry-After pauses the channel for every action.")


def parse_settings(text: str) -> dict:
    """``key = value`` lines into a config dict; whole numbers become ints."""
    config = {}
    for number, line in enumerate((text or "").splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or len(key) > 64 or len(value) > 2048:
            raise InvalidInput(f"Line {number} should look like key = value.", field="settings")
        config[key] = _setting_value(value)
    return config


def _setting_value(value: str):
    """Whole numbers become ints and ``true`` / ``false`` booleans; anything else stays text."""
    if value.isdecimal() and len(value) < 10:
        return int(value)
    return {"true": True, "false": False}.get(value.lower(), value)


def settings_text(config: dict) -> str:
    def shown(value):
        return str(value).lower() if isinstance(value, bool) else value

    return "\n".join(f"{key} = {shown(value)}" for key, value in sorted((config or {}).items()))


def parse_slots_text(text: str) -> list[dict]:
    """The editor's lines (``09:00 mon tue wed``, ``13:30 every day``, ``10:00 weekdays``) in the API's shape;
    what each entry holds is checked by :func:`models.channels.slots.check_slots`."""
    entries = []
    for number, line in enumerate((text or "").splitlines(), start=1):
        words = line.replace(",", " ").lower().split()
        if not words or words[0].startswith("#"):
            continue
        if len(line) > 200:
            raise InvalidInput(f"Line {number} is too long for a posting time.", field="slots")
        rest = " ".join(words[1:])
        days = {"every day": list(WEEKDAYS), "daily": list(WEEKDAYS), "weekdays": list(WEEKDAYS[:5]),
                "weekends": list(WEEKDAYS[5:])}.get(rest, words[1:])
        if not days:
            raise InvalidInput(f"Line {number} should look like 09:00 mon tue wed (or 09:00 every day).",
                               field="slots")
        entries.append({"days": [day[:3] if len(day) > 3 and day[:3] in WEEKDAYS else day for day in days],
                        "time": words[0]})
    return entries


def slots_text(slots) -> str:
    """The stored posting times as the editor shows them, one time per line."""
    lines = []
    for entry in slots or []:
        days = entry["days"]
        named = {tuple(WEEKDAYS): "every day", tuple(WEEKDAYS[:5]): "weekdays", tuple(WEEKDAYS[5:]): "weekends"}
        lines.append(f"{entry['time']} {named.get(tuple(days), ' '.join(days))}")
    return "\n".join(lines)


def _channel(channel_id: int) -> Channel:
    channel = db.session.scalar(select(Channel).where(Channel.id == channel_id,
                                                      Channel.workspace_id == viewer().workspace.id))
    if channel is None:
        raise NotFound("There is no such channel in this workspace.")
    return channel


def _page(channel=None, *, error=None, status=200, result=None):
    v = viewer()
    channels = list(db.session.scalars(select(Channel).where(Channel.workspace_id == v.workspace.id)
                                       .order_by(Channel.name)))
    form = request.form if request.method == "POST" and error else None
    values = dict(
        name=form.get("name", "") if form else (channel.name if channel else ""),
        kind=form.get("kind", "log") if form else (channel.kind if channel else "log"),
        settings=form.get("settings", "") if form else (settings_text(channel.config) if channel else ""),
    )
    # Channels that send mail without checking the server's certificate: the page says so, loudly.
    unverified = {c.id for c in channels if c.kind == "smtp" and smtp.skips_tls_verification(c.config or {})}
    history = channel_events(db.session, v.workspace.id, channel.id) if channel else []
    rt = runtime()
    now = rt.now()
    states = {c.id: connections.connection_state(c, now) for c in channels}
    oauth_kinds = connections.oauth_kinds()
    setup = {kind: connections.setup_problem(current_app.config, kind) for kind in oauth_kinds}
    health = channel_health(db.session, channel, now=now) if channel else None
    body = render_page("channels/channels.html", v=v, channels=channels, editing=channel, values=values, error=error,
                       kinds=list(PROVIDERS), hints=SETTINGS_HINT, limits_hint=LIMITS_HINT,
                       unknown_rules={kind: unknown_outcome_rule(kind) for kind in PROVIDERS},
                       result=result, unverified=unverified, history=history, states=states,
                       oauth_kinds=oauth_kinds, setup=setup, health=health, slots_text=slots_text)
    # The Connect form's answer sends the browser on to the network's authorization page: a browser enforces
    # form-action on that redirect too, so this page's policy names that one origin beside our own.
    origin = connections.authorize_origin(channel) if channel is not None else None
    if origin:
        from webapp.pages import CONTENT_SECURITY_POLICY

        return body, status, {"Content-Security-Policy": CONTENT_SECURITY_POLICY.replace(
            "form-action 'self'", f"form-action 'self' {origin}")}
    return body, status


@bp.get("/channels")
@require(Permission.ADMINISTER)
def index():
    """The workspace's channels and a form to add one."""
    return _page()


@bp.get("/channels/<int:channel_id>")
@require(Permission.ADMINISTER)
def edit(channel_id: int):
    """One channel's settings, ready to edit."""
    return _page(_channel(channel_id))


def _save(channel: Channel | None):
    v = viewer()
    rt = runtime()
    try:
        config = parse_settings(request.form.get("settings", ""))
        # Before the write lock: a provider may read its network's settings (Instagram's publishing limit).
        config = read_from_network((request.form.get("kind") or "").strip(), config, now=rt.now(), box=rt.secret_box,
                                   secret=request.form.get("secret") or None, channel=channel)
        with write_session() as session:
            saved = save_channel(
                session, v.workspace.id, channel_id=channel.id if channel else None,
                name=request.form.get("name") or "", kind=(request.form.get("kind") or "").strip(), config=config,
                secret=request.form.get("secret") or None, clear_secret=request.form.get("clear_secret") == "yes",
                box=rt.secret_box, now=rt.now(), actor=v.actor,
            )
            saved_id, saved_name = saved.id, saved.name
    except DomainError as error:
        return _page(channel, error=error, status=error.status)
    flash(f"Channel {saved_name} saved.", "ok")
    return redirect(url_for("channels.edit", channel_id=saved_id), code=303)


@bp.post("/channels")
@require(Permission.ADMINISTER)
def create():
    """Add a channel."""
    return _save(None)


@bp.post("/channels/<int:channel_id>")
@require(Permission.ADMINISTER)
def update(channel_id: int):
    """Change a channel's name, kind, settings or secret."""
    return _save(_channel(channel_id))


@bp.get("/posting-times")
@require(Permission.READ)
def posting_times():
    """Every channel's posting times, where "Add to queue" puts posts; ops and admins edit them."""
    v = viewer()
    channels = list(db.session.scalars(select(Channel).where(Channel.workspace_id == v.workspace.id)
                                       .order_by(Channel.name)))
    return render_page("channels/posting_times.html", v=v, channels=channels, slots_text=slots_text, errors={},
                       typed={})


@bp.post("/channels/<int:channel_id>/slots")
@require(Permission.OPERATE)
def save_posting_times(channel_id: int):
    """Replace one channel's posting times."""
    v = viewer()
    check_may_set_posting_times(v.role)
    channel = _channel(channel_id)
    typed = request.form.get("slots", "")
    error = None
    try:
        raw = parse_slots_text(typed)
        with write_session() as session:
            save_slots(session, v.workspace.id, channel.name, raw)
    except DomainError as exc:
        error = exc
    db.session.expire_all()
    channel = _channel(channel_id)
    if is_htmx():
        return render_template("channels/_slots.html", channel=channel, error=error, typed=typed if error else None,
                               slots_text=slots_text, saved=error is None), error.status if error else 200
    if error is not None:
        channels = list(db.session.scalars(select(Channel).where(Channel.workspace_id == v.workspace.id)
                                           .order_by(Channel.name)))
        return render_page("channels/posting_times.html", v=v, channels=channels, slots_text=slots_text,
                           errors={channel.id: error}, typed={channel.id: typed}), error.status
    flash(f"Posting times of {channel.name} saved.", "ok")
    back = url_for("channels.edit", channel_id=channel.id) if request.form.get("back") == "channel" and v.can(
        Permission.ADMINISTER) else url_for("channels.posting_times")
    return redirect(back, code=303)


@bp.post("/channels/<int:channel_id>/test")
@require(Permission.ADMINISTER)
def test_send(channel_id: int):
    """Send one test message through the channel's provider and say how it went."""
    v = viewer()
    rt = runtime()
    channel = _channel(channel_id)
    target = (request.form.get("target") or "").strip()[:255] or "test"
    delivery = Delivery(
        action_id=None, workspace_id=v.workspace.id, channel_id=channel.id, channel_name=channel.name,
        action_type="test_send", target_key=target,
        payload={"body": "A test message from Tickwork.", "subject": "Tickwork test", "to": target},
        publish_at=rt.now(), attempt=1, config=dict(channel.config or {}), secret=channel.secret(rt.secret_box),
    )
    timeout = rt.policy.provider_timeout.total_seconds()
    context = SendContext(now=rt.now(), timeout=timeout, http=http_client())
    # A network that allows no test post (no drafts, no private posts) offers check(): the credentials are
    # checked without posting anything.
    check = getattr(PROVIDERS.get(channel.kind), "check", None)
    result = check(delivery, context) if check is not None else send_alone(channel.kind, delivery, context)
    ok = result.outcome is SendOutcome.SUCCESS
    if result.reconnect_needed:  # as a send would: renewed by the next refresh pass if it can be, else a person's
        with write_session() as session:
            if not connections.renew_soon(session, channel.id, now=rt.now()):
                connections.mark_reconnect_needed(session, channel.id, reason=result.message or "the token was refused",
                                                  now=rt.now())
    summary = dict(ok=ok, outcome=result.outcome.value, message=result.message, provider_id=result.provider_id,
                   checked_only=check is not None)
    if is_htmx():
        return render_template("channels/_test_result.html", result=summary), 200 if ok else 502
    return _page(channel, result=summary, status=200 if ok else 502)


@bp.post("/channels/<int:channel_id>/connect")
@require(Permission.ADMINISTER)
def connect(channel_id: int):
    """Start connecting the channel's account: off to the network's authorization page, with state and PKCE."""
    v = viewer()
    rt = runtime()
    channel = _channel(channel_id)
    if connections.oauth_spec(channel.kind) is None:
        raise InvalidInput(f"A {channel.kind} channel is connected with a secret, not an account.", field="kind")
    problem = connections.setup_problem(current_app.config, channel.kind)
    if problem:
        return _page(channel, error=InvalidInput(problem, field="kind", code="not_configured"), status=409)
    app = connections.oauth_app(current_app.config, channel.kind)
    with write_session() as session:
        url = connections.start_authorization(session, channel, user_id=v.user.id, app=app, box=rt.secret_box,
                                              now=rt.now(), timeout=rt.policy.provider_timeout.total_seconds())
    if is_htmx():  # htmx follows a redirect itself; the browser must leave for the network
        return "", 204, {"HX-Redirect": url}
    return redirect(url, code=303)


@bp.get("/oauth/callback/<kind>")
def oauth_callback(kind: str):
    """Where the network sends the person back: the state checked (one use, ten minutes, the same person), then the
    code exchanged and the account stored. Public (on the public-routes list): the state is its check."""
    from webapp.errors import page_or_message

    rt = runtime()
    user_id = current_user.id if current_user.is_authenticated else None
    try:
        with write_session() as session:
            pending = connections.take_authorization(session, kind, request.args.get("state"), user_id=user_id,
                                                     now=rt.now())
            if membership_role(session, pending.user_id, pending.workspace_id) != Role.ADMIN:
                raise connections.AuthorizationRefused("Only an admin of the workspace may connect its channels; "
                                                       "nothing was changed.")
            session.expunge(pending)
    except connections.AuthorizationRefused as refused:
        return page_or_message(400, refused.message)
    channel = db.session.get(Channel, pending.channel_id)
    if request.args.get("error") or not request.args.get("code"):
        words = request.args.get("error_description") or request.args.get("error") or "no authorization code"
        return page_or_message(400, f"The network did not connect the account ({words[:200]}). Nothing was "
                                    "changed: try Connect again on the channel's page.")
    app = connections.oauth_app(current_app.config, kind)
    if app is None or channel is None:
        return page_or_message(400, connections.setup_problem(current_app.config, kind) or connections.NOT_OURS)
    timeout = rt.policy.provider_timeout.total_seconds()
    try:
        tokens = connections.exchange_code(pending, request.args["code"], channel_config=channel.config or {}, app=app,
                                           box=rt.secret_box, now=rt.now(), timeout=timeout)
        account = connections.read_account(kind, tokens, channel.config or {}, timeout=timeout)
        with write_session() as session:
            actor = Actor.person(session.get(User, pending.user_id))
            stored = connections.store_connection(session, pending, tokens, account, box=rt.secret_box,
                                                  now=rt.now(), actor=actor)
            stored_id = stored.id
    except DomainError as error:
        return page_or_message(error.status, f"{error.message} Nothing was stored: try Connect again.")
    who = (account or {}).get("username") or (account or {}).get("name")
    flash(f"Connected{' as ' + who if who else ''}.", "ok")
    return redirect(url_for("channels.edit", channel_id=stored_id), code=303)
