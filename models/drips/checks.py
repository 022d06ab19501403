"""What campaigns, steps and contacts must satisfy; each refusal names its field and changes nothing.

Every check raises :class:`~models.core.errors.InvalidInput` (a 422) with the field as the API
names it (``steps[1].delay``, ``send_window.start``, ``timezone``), so both shells can point at it.
"""

import math
import re
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from models.accounts.members import EMAIL
from models.channels.tables import CHANNEL_NAME, Channel
from models.core.errors import InvalidInput
from models.drips.tables import OnFailure
from models.drips.templates import check_template
from models.timing.delay import InvalidDelay, parse_delay
from models.timing.send_window import InvalidSendWindow, parse_send_window
from models.timing.wall_time import InvalidTimezone, load_zone

MAX_STEPS = 50
MAX_NAME = 100
MAX_CONTACT_NAME = 200
MAX_ATTRIBUTES = 50
MAX_ATTRIBUTE_KEY = 64
MAX_ATTRIBUTE_VALUE = 1000
PHONE = re.compile(r"^\+[1-9][0-9]{7,14}$")
_PHONE_PUNCTUATION = re.compile(r"[\s().\-/]")
ATTRIBUTE_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")

# Which address a channel kind delivers to. A log or webhook channel delivers to the contact's
# email unless its settings say ``address = phone``; mastodon posts publicly and takes no drips.
EMAIL_KINDS = frozenset({"smtp", "postmark"})
PHONE_KINDS = frozenset({"twilio"})
DRIP_KINDS = frozenset({"log", "webhook", "smtp", "postmark", "twilio"})


def address_kind(channel: Channel) -> str:
    """``email`` or ``phone``: the contact address the channel delivers to."""
    if channel.kind in PHONE_KINDS:
        return "phone"
    if channel.kind in EMAIL_KINDS:
        return "email"
    return "phone" if (channel.config or {}).get("address") == "phone" else "email"


def action_type_for(channel: Channel) -> str:
    """The action type of a drip attempt on ``channel``: ``send_email`` or ``send_sms``."""
    return "send_sms" if address_kind(channel) == "phone" else "send_email"


def check_name(value, field: str = "name", max_length: int = MAX_NAME) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field, code="wrong_type" if value is not None else "missing")
    value = value.strip()
    if not value:
        raise InvalidInput(f"{field} must not be empty", field=field, code="missing")
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field, code="bad_character")
    if len(value) > max_length:
        raise InvalidInput(f"{field} is longer than {max_length} characters", field=field, code="too_long")
    return value


def check_on_failure(value) -> str:
    known = [choice.value for choice in OnFailure]
    if value not in known:
        raise InvalidInput(f"on_failure must be one of {', '.join(known)}", field="on_failure", code="bad_choice")
    return value


def check_window(value, field: str = "send_window") -> dict | None:
    """A send window in the API's shape, normalised, or None for "any time"."""
    if value is None:
        return None
    try:
        return parse_send_window(value).as_dict()
    except InvalidSendWindow as exc:
        raise InvalidInput(exc.message, field=f"{field}.{exc.part}" if exc.part else field,
                           code="bad_window") from None


def check_delay(value, field: str) -> str:
    """An ISO 8601 duration such as ``P2D`` or ``PT30M``, normalised."""
    try:
        return parse_delay(value).iso
    except InvalidDelay as exc:
        raise InvalidInput(exc.message, field=field, code="bad_delay") from None


def check_channel(session: Session, workspace_id: int, name, field: str) -> Channel:
    """The workspace's channel called ``name``, if drips can use it."""
    if not isinstance(name, str) or not CHANNEL_NAME.match(name.strip()):
        raise InvalidInput(f"{field} must name a channel of this workspace", field=field, code="unknown_channel")
    channel = session.scalar(select(Channel).where(Channel.workspace_id == workspace_id,
                                                   Channel.name == name.strip()))
    if channel is None:
        raise InvalidInput(f"no channel named {name.strip()!r} in this workspace", field=field, code="unknown_channel")
    if channel.kind not in DRIP_KINDS:
        raise InvalidInput(f"{channel.name} is a {channel.kind} channel; drips go out by email (smtp, postmark), "
                           "SMS (twilio), log or webhook", field=field, code="wrong_channel_kind")
    return channel


@dataclass(frozen=True)
class StepSpec:
    """A checked step as a request describes it; ``id`` names an existing step it keeps."""

    delay: str
    body: str
    subject: str | None = None
    channel_id: int | None = None
    send_window: dict | None = None
    id: int | None = None


STEP_FIELDS = {"id", "delay", "subject", "body", "channel", "send_window"}


def check_steps(session: Session, workspace_id: int, steps, default_channel: Channel) -> list[StepSpec]:
    """The ``steps`` list of a campaign request, each step checked (its templates compile)."""
    if not isinstance(steps, list):
        raise InvalidInput("steps must be a list of steps", field="steps", code="wrong_type")
    if not steps:
        raise InvalidInput("a campaign needs at least one step", field="steps", code="missing")
    if len(steps) > MAX_STEPS:
        raise InvalidInput(f"a campaign has at most {MAX_STEPS} steps", field="steps", code="too_many")
    checked = []
    for index, step in enumerate(steps):
        where = f"steps[{index}]"
        if not isinstance(step, dict):
            raise InvalidInput(f"{where} must be an object with delay, subject and body", field=where,
                               code="wrong_type")
        unknown = sorted(set(step) - STEP_FIELDS)
        if unknown:
            raise InvalidInput(f"{where} has an unknown field {unknown[0]!r}; a step takes "
                               f"{', '.join(sorted(STEP_FIELDS))}", field=f"{where}.{unknown[0]}",
                               code="unknown_field")
        ident = step.get("id")
        if ident is not None and (not isinstance(ident, int) or isinstance(ident, bool) or ident <= 0):
            raise InvalidInput(f"{where}.id must be the id of one of the campaign's steps", field=f"{where}.id",
                               code="wrong_type")
        if step.get("delay") is None:
            raise InvalidInput(f"{where}.delay is required, for example P2D or PT0S", field=f"{where}.delay",
                               code="missing")
        channel = (check_channel(session, workspace_id, step["channel"], f"{where}.channel")
                   if step.get("channel") is not None else None)
        email = address_kind(channel or default_channel) == "email"
        subject = check_template(step.get("subject"), f"{where}.subject", required=email)
        checked.append(StepSpec(
            delay=check_delay(step["delay"], f"{where}.delay"),
            body=check_template(step.get("body"), f"{where}.body"),
            subject=subject,
            channel_id=channel.id if channel is not None else None,
            send_window=check_window(step.get("send_window"), f"{where}.send_window"),
            id=ident,
        ))
    return checked


def check_email(value, field: str = "email") -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field, code="wrong_type")
    value = value.strip().lower()
    if not value:
        return None
    if len(value) > 254 or not EMAIL.match(value):
        raise InvalidInput(f"{value[:80]!r} is not an email address", field=field, code="invalid_email")
    return value


def check_phone(value, field: str = "phone") -> str | None:
    """A phone number in E.164 form (``+15555550123``); spaces, dashes, dots and brackets are dropped."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field, code="wrong_type")
    value = _PHONE_PUNCTUATION.sub("", value)
    if not value:
        return None
    if not PHONE.match(value):
        raise InvalidInput(f"{value[:40]!r} is not a phone number in E.164 form, like +15555550123", field=field,
                           code="invalid_phone")
    return value


def check_zone(value, field: str = "timezone") -> str | None:
    """An IANA zone, or None for "the workspace's"."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        load_zone(value.strip() if isinstance(value, str) else value)
    except InvalidTimezone as exc:
        raise InvalidInput(str(exc), field=field, code="bad_zone") from None
    return value.strip()


def check_attributes(value, field: str = "attributes") -> dict:
    """A flat object of names to text, numbers, booleans or null, for templates to use."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be an object of names to values", field=field, code="wrong_type")
    if len(value) > MAX_ATTRIBUTES:
        raise InvalidInput(f"a contact has at most {MAX_ATTRIBUTES} attributes", field=field, code="too_many")
    for key, item in value.items():
        if not ATTRIBUTE_KEY.match(key):
            raise InvalidInput(f"attribute name {key[:70]!r} must be letters, digits and _, starting with a letter",
                               field=f"{field}.{key[:64]}", code="bad_name")
        if item is not None and not isinstance(item, (str, int, float, bool)):
            raise InvalidInput(f"attribute {key!r} must be text, a number, true, false or null",
                               field=f"{field}.{key}", code="wrong_type")
        if isinstance(item, str) and (len(item) > MAX_ATTRIBUTE_VALUE or "\x00" in item):
            raise InvalidInput(f"attribute {key!r} is longer than {MAX_ATTRIBUTE_VALUE} characters", field=f"{field}.{key}",
                               code="too_long")
        if isinstance(item, float) and not math.isfinite(item):  # NaN and infinities do not survive JSON
            raise InvalidInput(f"attribute {key!r} is not a number", field=f"{field}.{key}", code="wrong_type")
    return dict(value)
