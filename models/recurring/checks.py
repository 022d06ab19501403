"""What a recurring rule must satisfy, checked once for the API, the dashboard and the CLI.

:func:`check_rule` turns the fields a person sent (strings, as typed) into a validated
:class:`RuleDefinition` or raises :class:`~models.core.errors.InvalidInput` naming the field
at fault; a :class:`~models.timing.recurrence.RecurrenceError` becomes one with its part as
the field. Every check is bounded: the RRULE by :func:`~models.timing.recurrence.parse_recurrence`
(ten years or 100,000 candidates), the rest by sizes. The payload is also held to what the
channel takes (:func:`check_content`: its text limit, a post's media). :func:`rrule_from_choices`
builds the common rules from the dashboard's choices, so nobody has to type an RRULE for them.
"""

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy.orm import Session

from models.channels.action_types import channel_action_types
from models.actions.scheduling import check_payload
from models.channels.providers import accepts_for
from models.channels.providers.accepts import media_breaks, text_breaks
from models.channels.reading import channel_by_name
from models.channels.tables import Channel
from models.core.errors import InvalidInput
from models.media.library import facts_of, media_in_order
from models.core.policy import Policy
from models.core.time_input import parse_day, parse_local_time
from models.recurring.reading import MENTION, PLACEHOLDER, occurrence_values, render_payload
from models.recurring.tables import MAX_ID, Misfire
from models.timing.recurrence import MAX_SKIPPED, Frequency, RecurrenceError, RecurrenceRule, parse_recurrence
from models.timing.wall_time import InvalidTimezone, resolve_wall_time

RULE_FIELDS = ("action_type", "channel", "target_key", "payload", "rrule", "starts_local", "ends_local",
               "exdates_local", "misfire")
REQUIRED = ("action_type", "channel", "target_key", "payload", "rrule", "starts_local")


@dataclass(frozen=True)
class RuleDefinition:
    """A rule that passed every check, ready to be stored."""

    action_type: str
    channel: Channel
    target_key: str
    payload: dict
    rrule: str  # as the time logic read it: upper case, parts in the order given
    starts_local: datetime
    ends_local: datetime | None
    exdates_local: list[str]
    misfire: str
    recurrence: RecurrenceRule

    def columns(self) -> dict:
        """The rule's stored definition (see :data:`models.recurring.lifecycle.DEFINITION`)."""
        zone = self.recurrence.zone
        return {
            "action_type": self.action_type, "channel_id": self.channel.id, "target_key": self.target_key,
            "payload": self.payload, "rrule": self.rrule, "starts_local": self.starts_local,
            "starts_at": resolve_wall_time(self.starts_local.date(), self.starts_local.time(), zone).instant,
            "ends_local": self.ends_local, "ends_at": self.recurrence.end_instant,
            "exdates_local": list(self.exdates_local), "misfire": self.misfire,
        }


def _text(value, field: str, max_length: int) -> str:
    if value is None:
        raise InvalidInput(f"{field} is required", field=field, code="missing")
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string", field=field, code="wrong_type")
    value = value.strip()
    if not value:
        raise InvalidInput(f"{field} must not be empty", field=field, code="missing")
    if "\x00" in value:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field, code="bad_character")
    if len(value) > max_length:
        raise InvalidInput(f"{field} is longer than {max_length} characters", field=field, code="too_long")
    return value


def _wall(value, field: str) -> datetime:
    if isinstance(value, datetime):
        return value
    return datetime.combine(*parse_local_time(value, field))


def check_exdates(values) -> list[str]:
    """Skipped dates as typed: a list of ``2026-12-25`` (the whole day) or ``2026-12-25T09:00`` (one occurrence)."""
    if values is None:
        return []
    if not isinstance(values, list):
        raise InvalidInput("exdates_local must be a list of dates (2026-12-25) or wall times (2026-12-25T09:00)",
                           field="exdates_local", code="wrong_type")
    if len(values) > MAX_SKIPPED:
        raise InvalidInput(f"at most {MAX_SKIPPED} dates can be skipped", field="exdates_local", code="too_many")
    read = []
    for value in values:
        if isinstance(value, str) and "T" in value:
            read.append(_wall(value, "exdates_local").strftime("%Y-%m-%dT%H:%M"))
        else:
            read.append(parse_day(value, "exdates_local").isoformat())
    return sorted(set(read))


def check_template(payload, policy: Policy) -> dict:
    """A JSON object whose only placeholders are ``{{ occurrence.local_date }}`` and ``{{ occurrence.local_time }}``."""
    if not isinstance(payload, dict):
        raise InvalidInput("payload must be a JSON object", field="payload", code="wrong_type")
    check_payload(payload, policy)
    _check_placeholders(payload)
    # The longest a filled-in payload can be: a date and a time are never longer than their placeholders.
    check_payload(render_payload(payload, occurrence_values(datetime(2026, 12, 31, 23, 59))), policy)
    return payload


# The payload keys a provider sends as the text of each action type (every provider reads ``body``;
# some networks' own names are aliases), each held to the channel's text limit; and where media go.
TEXT_KEYS = {"publish_post": ("body", "text", "status", "content", "message", "caption"),
             "send_sms": ("body", "text"), "send_email": ("body", "text")}
MEDIA_TYPES = ("publish_post",)


def check_content(session: Session, workspace_id: int, channel: Channel, action_type: str, payload: dict) -> None:
    """What the channel takes, as its provider declares it: each text at most the channel's limit (filled in
    with the longest date and time an occurrence can give), and a post's media in this workspace's library and
    within the channel's media rules. A refusal names the key (``payload.body``, ``payload.media``)."""
    filled = render_payload(payload, occurrence_values(datetime(2026, 12, 31, 23, 59)))
    accepts = accepts_for(channel.kind)
    texts = [(key, filled[key]) for key in TEXT_KEYS.get(action_type, ()) if isinstance(filled.get(key), str)]
    for key, text in texts:
        broken = text_breaks(accepts, channel.config, text)
        if broken is not None:
            raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the payload's {key}: {broken.message}",
                               field=f"payload.{key}", code="too_long", channel=channel.name, rule=broken.rule)
    if action_type not in MEDIA_TYPES:
        return
    media = payload.get("media", [])
    if not isinstance(media, list) or len(media) > 10 or not all(
            isinstance(item, int) and not isinstance(item, bool) and 0 < item <= MAX_ID for item in media):
        raise InvalidInput("payload.media must be a list of at most 10 media ids from the library", field="payload.media",
                           code="bad_media_id")
    facts = [facts_of(item) for item in media_in_order(session, workspace_id, media, field="payload.media")]
    broken = media_breaks(accepts, facts, texts[0][1] if texts else None, channel.config)
    if broken is not None:
        where = texts[0][0] if broken.rule.startswith("caption.") else "media"
        raise InvalidInput(f"{channel.name} ({channel.kind}) refuses the payload's {where}: {broken.message}",
                           field=f"payload.{where}", code="too_long" if where != "media" else "media_refused",
                           channel=channel.name, rule=broken.rule)


def _check_placeholders(value) -> None:
    if isinstance(value, str):
        for mention in MENTION.findall(value):
            if not PLACEHOLDER.fullmatch(mention):
                raise InvalidInput(
                    f"payload: {mention[:60]!r} is not filled in; an occurrence fills in only "
                    "{{ occurrence.local_date }} and {{ occurrence.local_time }}",
                    field="payload", code="bad_placeholder")
    elif isinstance(value, dict):
        for item in value.values():
            _check_placeholders(item)
    elif isinstance(value, list):
        for item in value:
            _check_placeholders(item)


def check_misfire(value) -> str:
    if value is None:
        return Misfire.SKIP.value
    known = [m.value for m in Misfire]
    if value not in known:
        raise InvalidInput(f"misfire must be one of {', '.join(known)}", field="misfire", code="bad_misfire")
    return value


def check_recurrence(rrule, starts_local, *, zone: str, now: datetime, policy: Policy, ends_local=None,
                     exdates_local=None) -> tuple[RecurrenceRule, list[str]]:
    """The recurrence alone (what the dashboard previews): the rule read in ``zone``, and the skipped dates.

    Refused when it has no occurrence after ``now`` (a rule whose every occurrence is past).
    """
    starts = _wall(starts_local, "starts_local") if starts_local is not None else None
    if starts is None:
        raise InvalidInput("starts_local is required (the first occurrence, like 2026-12-01T09:00)",
                           field="starts_local", code="missing")
    ends = _wall(ends_local, "ends_local") if ends_local is not None else None
    exdates = check_exdates(exdates_local)
    if not isinstance(rrule, str):
        raise InvalidInput("rrule must be a string such as FREQ=WEEKLY;BYDAY=TU", field="rrule",
                           code="wrong_type" if rrule is not None else "missing")
    try:
        recurrence = parse_recurrence(rrule, starts_local=starts, zone=zone, ends_local=ends,
                                      exdates_local=[datetime.fromisoformat(d) if "T" in d else date.fromisoformat(d)
                                                     for d in exdates],
                                      max_per_day=policy.recurring_max_per_day)
    except RecurrenceError as exc:
        raise InvalidInput(exc.message, field=exc.part, code=exc.code) from None
    except InvalidTimezone as exc:
        raise InvalidInput(f"the workspace's time zone is not valid: {exc}", field="timezone",
                           code="bad_zone") from None
    if not recurrence.has_occurrence_after(now):
        raise InvalidInput("the rule has no occurrence after now; move starts_local or the end later",
                           field="ends_local" if ends is not None else "rrule", code="no_future_occurrence")
    return recurrence, exdates


def check_rule(session: Session, workspace_id: int, fields: dict, *, zone: str, now: datetime,
               policy: Policy) -> RuleDefinition:
    """Every field of a rule checked, in the order a person reads the form; the first wrong one is named."""
    for name in REQUIRED:
        if fields.get(name) is None:
            raise InvalidInput(f"{name} is required", field=name, code="missing")
    action_type = _text(fields.get("action_type"), "action_type", 64)
    channel_name = _text(fields.get("channel"), "channel", 63)
    channel = channel_by_name(session, workspace_id, channel_name)
    if channel is None:
        raise InvalidInput(f"no channel named {channel_name!r} in this workspace", field="channel",
                           code="unknown_channel")
    offered = channel_action_types(channel)
    if action_type not in offered:
        raise InvalidInput(f"the channel {channel.name} ({channel.kind}) sends {', '.join(offered)}, not {action_type}",
                           field="action_type", code="wrong_action_type")
    target_key = _text(fields.get("target_key"), "target_key", 255)
    payload = check_template(fields.get("payload"), policy)
    check_content(session, workspace_id, channel, action_type, payload)
    recurrence, exdates = check_recurrence(fields.get("rrule"), fields.get("starts_local"), zone=zone, now=now,
                                           policy=policy, ends_local=fields.get("ends_local"),
                                           exdates_local=fields.get("exdates_local"))
    return RuleDefinition(action_type=action_type, channel=channel, target_key=target_key, payload=payload,
                          rrule=recurrence.text, starts_local=recurrence.starts_local,
                          ends_local=_wall(fields["ends_local"], "ends_local") if fields.get("ends_local") else None,
                          exdates_local=exdates, misfire=check_misfire(fields.get("misfire")), recurrence=recurrence)


def check_unknown_fields(body: dict, allowed=RULE_FIELDS) -> None:
    """Refuse a field the rule does not have, naming it (a typo must not pass silently)."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise InvalidInput(f"unknown field {unknown[0][:40]!r}; expected {', '.join(allowed)}",
                           field=unknown[0][:40], code="unknown_field")


# -- the dashboard's rule builder ------------------------------------------------------------

REPEATS = {
    "daily": "Every day",
    "weekdays": "Every weekday (Monday to Friday)",
    "weekly": "Weekly, on the days chosen",
    "monthly_day": "Monthly, on a day of the month",
    "monthly_weekday": "Monthly, on a weekday (such as the last Friday)",
    "custom": "Custom (an RRULE)",
}
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
ORDINALS = {"1": "first", "2": "second", "3": "third", "4": "fourth", "-1": "last"}


def _whole(raw, field: str, low: int, high: int, default: int | None = None) -> int:
    text = (raw or "").strip() if isinstance(raw, str) else raw
    if text in (None, "") and default is not None:
        return default
    if isinstance(text, str) and text.lstrip("-").isdecimal() and len(text) < 6 and low <= int(text) <= high:
        return int(text)
    raise InvalidInput(f"{field} must be a whole number from {low} to {high}", field=field, code="bad_number")


def rrule_from_choices(repeat, *, interval=None, weekdays=(), month_day=None, ordinal=None, weekday=None,
                       count=None, raw=None) -> str:
    """The RRULE for the dashboard's choices ("every weekday", "the last Friday of every month", ...).

    ``custom`` takes the RRULE as typed (``raw``); every other choice writes it out. A wrong
    choice is refused naming its form field.
    """
    if repeat not in REPEATS:
        raise InvalidInput("choose how often it repeats", field="repeat", code="bad_choice")
    if repeat == "custom":
        if not isinstance(raw, str) or not raw.strip():
            raise InvalidInput("write the rule, such as FREQ=WEEKLY;BYDAY=TU", field="rrule", code="missing")
        return raw.strip()
    every = 1 if repeat == "weekdays" else _whole(interval, "interval", 1, 99, default=1)
    parts = []
    if repeat == "daily":
        parts = ["FREQ=DAILY"]
    elif repeat == "weekdays":
        parts = ["FREQ=WEEKLY", "BYDAY=MO,TU,WE,TH,FR"]
    elif repeat == "weekly":
        days = [day for day in WEEKDAYS if day in set(weekdays or ())]
        if not days or len(days) != len(set(weekdays)):
            raise InvalidInput("choose at least one day of the week", field="weekdays", code="missing")
        parts = ["FREQ=WEEKLY", "BYDAY=" + ",".join(days)]
    elif repeat == "monthly_day":
        day = -1 if month_day == "last" else _whole(month_day, "month_day", 1, 31)
        parts = ["FREQ=MONTHLY", f"BYMONTHDAY={day}"]
    else:
        if ordinal not in ORDINALS:
            raise InvalidInput("choose which one of the month (first ... last)", field="ordinal", code="bad_choice")
        if weekday not in WEEKDAYS:
            raise InvalidInput("choose a day of the week", field="weekday", code="bad_choice")
        parts = ["FREQ=MONTHLY", f"BYDAY={ordinal}{weekday}"]
    if every > 1:
        parts.insert(1, f"INTERVAL={every}")
    if count not in (None, ""):
        parts.append(f"COUNT={_whole(count, 'count', 1, 10_000)}")
    return ";".join(parts)


def choices_from_rrule(rrule: str) -> dict:
    """The builder's choices that write ``rrule`` back, or ``custom`` with the RRULE as it is."""
    parts = dict(part.split("=", 1) for part in rrule.split(";") if "=" in part)
    every = parts.pop("INTERVAL", "1")
    count = parts.pop("COUNT", "")
    found = {"repeat": "custom", "rrule": rrule, "interval": every, "count": count, "weekdays": [],
             "month_day": "", "ordinal": "-1", "weekday": "FR"}
    freq, byday, monthday = parts.pop("FREQ", ""), parts.pop("BYDAY", None), parts.pop("BYMONTHDAY", None)
    if parts:
        return found
    if freq == "DAILY" and not byday and not monthday:
        found["repeat"] = "daily"
    elif freq == "WEEKLY" and byday == "MO,TU,WE,TH,FR" and every == "1" and not monthday:
        found["repeat"] = "weekdays"
    elif freq == "WEEKLY" and byday and not monthday and all(day in WEEKDAYS for day in byday.split(",")):
        found.update(repeat="weekly", weekdays=byday.split(","))
    elif freq == "MONTHLY" and monthday and not byday and monthday.lstrip("-").isdecimal():
        found.update(repeat="monthly_day", month_day="last" if monthday == "-1" else monthday)
    elif freq == "MONTHLY" and byday and not monthday and byday[:-2] in ORDINALS and byday[-2:] in WEEKDAYS:
        found.update(repeat="monthly_weekday", ordinal=byday[:-2], weekday=byday[-2:])
    if found["repeat"] != "custom" and rrule_from_choices(**{k: found[k] for k in (
            "repeat", "interval", "weekdays", "month_day", "ordinal", "weekday", "count")}) != rrule:
        found["repeat"] = "custom"  # written some other way: keep it as the person typed it
    return found


def month_day_note(recurrence: RecurrenceRule) -> str | None:
    """Words for a monthly rule on day 29, 30 or 31: months without that day are skipped."""
    late = sorted(day for day in recurrence.by_month_day if day >= 29)
    if (not late and recurrence.frequency is Frequency.MONTHLY and not recurrence.by_weekday
            and not recurrence.by_month_day and recurrence.starts_local.day >= 29):
        late = [recurrence.starts_local.day]  # no BYMONTHDAY: the day comes from starts_local
    if not late:
        return None
    return (f"Months without a day {late[0]} are skipped (RFC 5545). To run on every month's last day, "
            "choose “the last day” instead.")
