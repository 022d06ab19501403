"""Defining a channel: the checks its name, kind and settings must pass, and saving it.

Both shells call :func:`save_channel` (the dashboard's channel form and ``tickwork channel
add``); every refusal is a typed error naming its field, and nothing is written.

A channel's secret is bound to its destination: changing where it sends (its kind, ``url``,
SMTP ``host`` or ``port``) while a secret is stored needs the secret typed again (or
removed), else 422 on ``secret``, so a stored token never follows a URL to another host.
Every such change, and every secret replaced or removed, is a ``channel_events`` row (who,
when, from which destination to which), never holding the secret itself.

A provider may read settings from its network when a channel is saved (Instagram's publishing
limit, a Mastodon instance's own limits): a provider that offers ``read_at_save(config, secret, context) -> dict`` gets the
channel's settings and secret (None when there is none), and what it answers is added to the settings. The shells call
:func:`read_from_network` before opening the write transaction, so no network call holds the
database's write lock; a network that cannot be reached never refuses the save.
"""

import re
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.channels.action_types import ACTION_TYPES, SENDS_SETTING, sends_setting
from models.channels.connections import check_endpoint_settings, forget_connection, oauth_spec
from models.channels.limits import validate_limits
from models.channels.providers import PROVIDERS, SendContext
from models.channels.providers.http import http_client
from models.channels.tables import CHANNEL_NAME, Channel, ChannelEvent, ChannelKind
from models.core.egress import check_url, host_refusal, url_refusal
from models.core.errors import Conflict, InvalidInput, NotFound
from models.core.moves import Actor
from models.core.secrets_box import SecretBox

MAX_SETTINGS = 20
# The kinds whose destination is their ``url`` setting (the others' defaults are public services).
URL_KINDS = (ChannelKind.WEBHOOK, ChannelKind.MASTODON, ChannelKind.POSTMARK, ChannelKind.TWILIO)
_WEB_URL = re.compile(r"^https?://[^\s/]+")


def validate_channel(name, kind, config) -> None:
    """Refuse a channel definition with :class:`InvalidInput` naming what is wrong."""
    if not isinstance(name, str) or not CHANNEL_NAME.match(name):
        raise InvalidInput("A channel name is 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit.",
                           field="name")
    # A kind is accepted exactly when a provider is registered for it (models.channels.providers.PROVIDERS),
    # so a new provider module is offered and checked without a list to keep here.
    if not isinstance(kind, str) or kind not in PROVIDERS:
        raise InvalidInput(f"Unknown channel kind {str(kind)[:40]!r}; one of {', '.join(PROVIDERS)}.",
                           field="kind")
    if not isinstance(config, dict):
        raise InvalidInput("A channel's settings are key = value pairs.", field="settings")
    if len(config) > MAX_SETTINGS:
        raise InvalidInput(f"A channel has at most {MAX_SETTINGS} settings.", field="settings")
    if kind in (ChannelKind.WEBHOOK, ChannelKind.MASTODON):
        url = config.get("url")
        if not isinstance(url, str) or not _WEB_URL.match(url):
            what = "A webhook channel needs an http(s) url." if kind == ChannelKind.WEBHOOK else \
                "A mastodon channel needs its instance's http(s) url."
            raise InvalidInput(what, field="url")
    if kind in URL_KINDS and "url" in config:
        check_url(config["url"], field="url")  # the egress policy, at save time: the scheme, the address
    validate_limits(kind, config)
    if SENDS_SETTING in config and not sends_setting(config[SENDS_SETTING]):
        raise InvalidInput(f"sends lists the action types this channel sends: {', '.join(ACTION_TYPES)}.",
                           field="settings", code="bad_setting")
    check_endpoint_settings(kind, config)  # an OAuth kind's endpoints: where the app's secret and the tokens go
    # A provider that reads settings beyond these checks them itself (smtp: port, security, ca_file, tls_verify).
    check_settings = getattr(PROVIDERS.get(kind), "validate_config", None)
    if check_settings is not None:
        check_settings(config)


# How long a save waits on a network it reads from (the whole read, every request of it).
READ_AT_SAVE_TIMEOUT = 5.0


def read_from_network(kind: str, config: dict, *, secret: str | None, now: datetime, box: SecretBox | None = None,
                      channel: Channel | None = None) -> dict:
    """``config`` with what ``kind``'s provider reads from its network at save time, if it reads anything.

    ``secret`` is the one typed for this save; without one, the stored secret of ``channel`` is
    used only while the destination stays the same (a stored token never follows a URL to
    another host). The read goes through the egress policy; it never raises for the network.
    """
    read = getattr(PROVIDERS.get(kind), "read_at_save", None)
    if read is None or not isinstance(config, dict):
        return config
    if not secret and channel is not None and box is not None and channel.secret_sealed \
            and (channel.kind, destination(channel.kind, channel.config)) == (kind, destination(kind, config)):
        secret = channel.secret(box)
    found = read(dict(config), secret, SendContext(now=now, timeout=READ_AT_SAVE_TIMEOUT, http=http_client()))
    return {**config, **found}


# Where a kind sends when its settings name no url (the providers' defaults).
DEFAULT_URLS = {ChannelKind.POSTMARK.value: "https://api.postmarkapp.com", ChannelKind.TWILIO.value: "https://api.twilio.com"}
SOMEONE = Actor(label="system")


def destination(kind: str, config: dict) -> str | None:
    """Where a channel of ``kind`` with ``config`` connects to, as compared and recorded; None for ``log``."""
    config = config or {}
    if kind == ChannelKind.SMTP.value:
        host = config.get("host")
        return f"smtp://{host}:{config.get('port', 587)}" if host else "smtp://"
    if kind == ChannelKind.LOG.value or kind not in PROVIDERS:
        return None
    url = config.get("url") or DEFAULT_URLS.get(kind)
    return str(url).strip() if url else None


def shown_destination(where: str | None) -> str | None:
    """A destination as an event records it: without any user-info (``user:password@``) in it."""
    if not where:
        return where
    try:
        parts = urlsplit(where)
        if parts.username is None and parts.password is None:
            return where
        host = parts.hostname or ""
        netloc = (f"[{host}]" if ":" in host else host) + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return "(not a URL)"


def _oauth_endpoints(kind: str, config: dict) -> tuple:
    """The endpoints an OAuth kind's settings may point elsewhere (a test's fake): its tokens go there too."""
    spec = oauth_spec(kind)
    if spec is None:
        return ()
    return tuple((config or {}).get(key) for key in (spec.authorize_url_key, spec.token_url_key, spec.refresh_url_key))


def _check_secret_follows(channel: Channel, kind: str, config: dict, secret: str | None, clear_secret: bool) -> None:
    """A stored secret never goes to a destination it was not typed in for (nor a connected account's refresh
    token to another token endpoint)."""
    if not (channel.secret_sealed or channel.refresh_token_sealed) or secret or clear_secret:
        return
    if ((channel.kind, destination(channel.kind, channel.config), _oauth_endpoints(channel.kind, channel.config))
            != (kind, destination(kind, config), _oauth_endpoints(kind, config))):
        if oauth_spec(channel.kind) is not None:
            raise InvalidInput("Changing where a connected channel sends or gets its tokens needs connecting again: "
                               "tick Disconnect and save, then Connect.", field="secret", code="secret_required")
        raise InvalidInput("Changing where the channel sends (its kind, url, host or port) needs its secret again: "
                           "type the secret for the new destination, or remove the secret.", field="secret",
                           code="secret_required")


def _record(session: Session, channel: Channel, change: str, actor: Actor, now: datetime, **detail) -> None:
    session.add(ChannelEvent(channel_id=channel.id, workspace_id=channel.workspace_id, at=now, actor=actor.label,
                             actor_user_id=actor.user_id, change=change, detail=detail))


def save_channel(
    session: Session,
    workspace_id: int,
    *,
    name: str,
    kind: str,
    config: dict,
    box: SecretBox,
    now: datetime,
    channel_id: int | None = None,
    secret: str | None = None,
    clear_secret: bool = False,
    actor: Actor = SOMEONE,
) -> Channel:
    """Add a channel, or change channel ``channel_id``: its name, kind, settings and, if given, its secret.

    The secret is sealed with ``box`` and never returned; ``clear_secret`` removes it. A
    name another channel of the workspace has is a 409 ``channel_exists``. Changing the
    destination of a channel that holds a secret needs ``secret`` (or ``clear_secret``):
    422 ``secret_required`` on ``secret`` otherwise. ``actor`` is recorded on the events.
    """
    name = name.strip() if isinstance(name, str) else name
    validate_channel(name, kind, config)
    taken = select(Channel.id).where(Channel.workspace_id == workspace_id, Channel.name == name)
    if channel_id is not None:
        taken = taken.where(Channel.id != channel_id)
    if session.scalar(taken) is not None:
        raise Conflict(f"A channel named {name!r} already exists.", field="name", code="channel_exists")
    before = None
    if channel_id is None:
        channel = Channel(workspace_id=workspace_id, created_at=now)
        session.add(channel)
    else:
        channel = session.scalar(select(Channel).where(Channel.id == channel_id, Channel.workspace_id == workspace_id)
                                 .with_for_update())
        if channel is None:
            raise NotFound("There is no such channel in this workspace.")
        _check_secret_follows(channel, kind, config, secret, clear_secret)
        before = (channel.kind, destination(channel.kind, channel.config), bool(channel.secret_sealed))
    channel.name, channel.kind, channel.config = name, kind, dict(config)
    if clear_secret:
        channel.set_secret(box, None)
    elif secret:
        channel.set_secret(box, secret)
    if clear_secret or secret:
        # A connected account's refresh token and expiry belong to the token they came with.
        forget_connection(channel)
        if clear_secret:
            channel.connected_account, channel.connected_at = None, None
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:  # another request took the name between our look and this write
        raise Conflict(f"A channel named {name!r} already exists.", field="name", code="channel_exists") from None
    _record_changes(session, channel, before, kind, config, secret, clear_secret, actor, now)
    return channel


def _record_changes(session: Session, channel: Channel, before, kind: str, config: dict, secret: str | None,
                    clear_secret: bool, actor: Actor, now: datetime) -> None:
    """The events of one save: created, or the destination changed, or the secret replaced or removed."""
    where = shown_destination(destination(kind, config))
    secret_change = "removed" if clear_secret and (before is None or before[2]) else ("replaced" if secret else None)
    if before is None:
        _record(session, channel, "created", actor, now, kind=kind, destination=where,
                secret="set" if secret and not clear_secret else "none")
        return
    old_kind, old_where, _ = before
    if (old_kind, old_where) != (kind, destination(kind, config)):
        _record(session, channel, "destination_changed", actor, now, from_kind=old_kind,
                from_destination=shown_destination(old_where), to_kind=kind, to_destination=where,
                secret=secret_change or "none")
    elif secret_change == "replaced":
        _record(session, channel, "secret_replaced", actor, now)
    elif secret_change == "removed":
        _record(session, channel, "secret_removed", actor, now)


def refused_channels(session: Session) -> list[tuple[Channel, str, str]]:
    """Every channel whose destination the egress policy refuses now: ``(channel, field, why)``.

    ``tickwork db upgrade`` lists them, since a channel saved before the policy (a relay on
    ``localhost:25``) fails with "destination not allowed" until its address is allowed.
    """
    found = []
    kinds = [kind.value for kind in (*URL_KINDS, ChannelKind.SMTP)]
    for channel in session.scalars(select(Channel).where(Channel.kind.in_(kinds)).order_by(Channel.workspace_id,
                                                                                           Channel.name)):
        config = channel.config or {}
        if channel.kind == ChannelKind.SMTP.value:
            why = host_refusal(config["host"]) if config.get("host") else None
            field = "host"
        else:
            url = config.get("url") or DEFAULT_URLS.get(channel.kind)
            why = url_refusal(url) if url else None
            field = "url"
        if why is not None:
            found.append((channel, field, why))
    return found
