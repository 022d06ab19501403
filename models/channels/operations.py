"""Defining a channel: the checks its name, kind and settings must pass, and saving it.

Both shells call :func:`save_channel` (the dashboard's channel form and ``tickwork channel
add``); every refusal is a typed error naming its field, and nothing is written.
"""

import re
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from models.channels.limits import validate_limits
from models.channels.providers import PROVIDERS
from models.channels.tables import CHANNEL_NAME, Channel, ChannelKind
from models.core.errors import Conflict, InvalidInput, NotFound
from models.core.secrets_box import SecretBox

MAX_SETTINGS = 20
_WEB_URL = re.compile(r"^https?://[^\s/]+")


def validate_channel(name, kind, config) -> None:
    """Refuse a channel definition with :class:`InvalidInput` naming what is wrong."""
    if not isinstance(name, str) or not CHANNEL_NAME.match(name):
        raise InvalidInput("A channel name is 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit.",
                           field="name")
    try:
        kind = ChannelKind(kind)
    except ValueError:
        raise InvalidInput(f"Unknown channel kind {kind!r}; one of {', '.join(k.value for k in ChannelKind)}.",
                           field="kind") from None
    if not isinstance(config, dict):
        raise InvalidInput("A channel's settings are key = value pairs.", field="settings")
    if len(config) > MAX_SETTINGS:
        raise InvalidInput(f"A channel has at most {MAX_SETTINGS} settings.", field="settings")
    if kind is ChannelKind.WEBHOOK:
        url = config.get("url")
        if not isinstance(url, str) or not _WEB_URL.match(url):
            raise InvalidInput("A webhook channel needs an http(s) url.", field="url")
    validate_limits(kind.value, config)
    # A provider that reads settings beyond these checks them itself (smtp: port, security, ca_file, tls_verify).
    check_settings = getattr(PROVIDERS.get(kind.value), "validate_config", None)
    if check_settings is not None:
        check_settings(config)


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
) -> Channel:
    """Add a channel, or change channel ``channel_id``: its name, kind, settings and, if given, its secret.

    The secret is sealed with ``box`` and never returned; ``clear_secret`` removes it. A
    name another channel of the workspace has is a 409 ``channel_exists``.
    """
    name = name.strip() if isinstance(name, str) else name
    validate_channel(name, kind, config)
    taken = select(Channel.id).where(Channel.workspace_id == workspace_id, Channel.name == name)
    if channel_id is not None:
        taken = taken.where(Channel.id != channel_id)
    if session.scalar(taken) is not None:
        raise Conflict(f"A channel named {name!r} already exists.", field="name", code="channel_exists")
    if channel_id is None:
        channel = Channel(workspace_id=workspace_id, created_at=now)
        session.add(channel)
    else:
        channel = session.scalar(select(Channel).where(Channel.id == channel_id, Channel.workspace_id == workspace_id))
        if channel is None:
            raise NotFound("There is no such channel in this workspace.")
    channel.name, channel.kind, channel.config = name, kind, dict(config)
    if clear_secret:
        channel.set_secret(box, None)
    elif secret:
        channel.set_secret(box, secret)
    try:
        with session.begin_nested():
            session.flush()
    except IntegrityError:  # another request took the name between our look and this write
        raise Conflict(f"A channel named {name!r} already exists.", field="name", code="channel_exists") from None
    return channel
