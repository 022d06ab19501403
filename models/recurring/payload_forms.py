"""The rule builder's payload forms: one per action type, the payload keys each writes, and how its fields and
the advanced JSON box make one payload.

| action type    | fields (the payload key each writes)                     | required             |
|----------------|----------------------------------------------------------|----------------------|
| ``publish_post`` | Post text (``body``), Media (``media``: library ids)   | ``body``             |
| ``send_email``   | Subject (``subject``), Body (``body``, plain text), HTML body (``html``) | ``subject``, and ``body`` or ``html`` |
| ``send_sms``     | Message (``body``)                                     | ``body``             |

Every provider reads ``body`` (a network's own ``status`` or ``content`` are aliases it also
reads), so what a form writes goes out on every channel of its kinds; a webhook or log
channel sends the payload as it is.

**One rule between the fields and the JSON box: each key is written in one place.** The
fields write their keys; the box adds the keys the form has no field for (``headers``,
``from``, ``reply_to``...). A key the box also names is taken from the box while its field is
left empty, and refused, naming the field, when both give it and they differ: nothing is
dropped or overridden without a word. Editing a rule puts each stored key a field can show in
that field and every other key in the box, so saving the form keeps them. An action type
without a form takes the box as its whole payload.

Only the shape is checked here (required fields, media ids, placeholders); what the chosen
channel takes (its text limit, its media rules) is :func:`models.recurring.checks.check_content`,
which the API's rules meet too.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass

from models.core.errors import InvalidInput
from models.recurring.reading import MENTION, PLACEHOLDER
from models.recurring.tables import MAX_ID

LINE, TEXT, MEDIA = "line", "text", "media"
MAX_MEDIA = 10


@dataclass(frozen=True)
class PayloadField:
    """One field of a form: the payload key it writes, how it is typed (one line, text, media ids)."""

    key: str
    label: str
    kind: str = TEXT
    hint: str = ""
    rows: int = 4
    called: str = ""  # how a refusal names what is missing ("a subject")


@dataclass(frozen=True)
class PayloadForm:
    """The fields of one action type's payload; ``required`` lists groups of keys of which one must be given."""

    action_type: str
    title: str
    fields: tuple[PayloadField, ...]
    required: tuple[tuple[str, ...], ...]

    def input_name(self, field: PayloadField) -> str:
        """The form input's name and id (``send_email-subject``): unique across the forms, so each keeps its text."""
        return f"{self.action_type}-{field.key}"

    def field(self, key: str) -> PayloadField | None:
        return next((field for field in self.fields if field.key == key), None)

    def is_required(self, field: PayloadField) -> bool:
        return (field.key,) in self.required


FORMS = {form.action_type: form for form in (
    PayloadForm("publish_post", "The post", (
        PayloadField("body", "Post text", hint="what each occurrence posts; the channel's own limit applies", rows=5,
                     called="its text"),
        PayloadField("media", "Media", MEDIA, hint="optional: ids from the media library, one per line or comma "
                                                   "separated", rows=2),
    ), required=(("body",),)),
    PayloadForm("send_email", "The email", (
        PayloadField("subject", "Subject", LINE, called="a subject"),
        PayloadField("body", "Body", hint="plain text; required unless the HTML body is given", rows=6,
                     called="a body"),
        PayloadField("html", "HTML body", hint="optional: sent beside the plain text, or alone", rows=4,
                     called="an HTML body"),
    ), required=(("subject",), ("body", "html"))),
    PayloadForm("send_sms", "The SMS", (
        PayloadField("body", "Message", hint="the channel's own limit applies", rows=3, called="a message"),
    ), required=(("body",),)),
)}


def form_for(action_type) -> PayloadForm | None:
    """The form of ``action_type``, or None for a type written as JSON only."""
    return FORMS.get(action_type) if isinstance(action_type, str) else None


def payload_field(key: str) -> str:
    """How a refusal names a payload key (``payload.subject``): the view shows it on that key's field."""
    return f"payload.{key}"


def parse_json_box(text) -> dict:
    """The JSON box as an object; empty is an empty object. A refusal names ``payload``."""
    text = (text or "").strip() if isinstance(text, str) else ""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidInput("The payload must be JSON, such as {\"headers\": {\"Reply-To\": \"team@example.com\"}}.",
                           field="payload", code="bad_json") from None
    if not isinstance(value, dict):
        raise InvalidInput("The payload must be a JSON object, such as {\"subject\": \"Hello\"}.", field="payload",
                           code="wrong_type")
    return value


def media_from_text(text: str, field: str) -> list[int]:
    """Media ids as typed (one per line, or separated by commas): whole numbers, each named once."""
    ids = []
    for item in text.replace(",", "\n").split():
        if item.lower().startswith(("http://", "https://")):
            raise InvalidInput(f"{item[:80]!r} is a link: put it in the media library first and name its id",
                               field=field, code="bad_link")
        if not (item.isascii() and item.isdecimal() and len(item) <= 10 and 1 <= int(item) <= MAX_ID):
            raise InvalidInput(f"{item[:80]!r} is not a media id (a whole number from the media library)",
                               field=field, code="bad_media_id")
        ids.append(int(item))
    if len(ids) > MAX_MEDIA:
        raise InvalidInput(f"at most {MAX_MEDIA} media items", field=field, code="too_many")
    if len(set(ids)) != len(ids):
        raise InvalidInput("a media item is named twice", field=field, code="duplicate")
    return ids


def check_placeholders(value: str, field: str) -> None:
    """Refuse a ``{{ occurrence.* }}`` an occurrence does not fill in, naming the field it is in."""
    for mention in MENTION.findall(value):
        if not PLACEHOLDER.fullmatch(mention):
            raise InvalidInput(f"{mention[:60]!r} is not filled in; an occurrence fills in only "
                               "{{ occurrence.local_date }} and {{ occurrence.local_time }}",
                               field=field, code="bad_placeholder")


def _typed(form: PayloadForm, field: PayloadField, typed: Mapping):
    """What ``field`` holds as typed: its value for the payload, or None when it is left empty."""
    raw = typed.get(form.input_name(field)) or ""
    raw = raw.replace("\r\n", "\n") if isinstance(raw, str) else ""
    if not raw.strip():
        return None
    where = payload_field(field.key)
    if field.kind == MEDIA:
        return media_from_text(raw, where)
    if "\x00" in raw:
        raise InvalidInput(f"{field.label} must not contain NUL characters", field=where, code="bad_character")
    value = raw.strip()
    if field.kind == LINE and "\n" in value:
        raise InvalidInput(f"{field.label} is one line", field=where, code="bad_character")
    check_placeholders(value, where)
    return value


def payload_from_form(action_type, typed: Mapping, box) -> dict:
    """The payload a builder's submission makes: its type's fields, plus the JSON box's other keys (see the
    module docstring). Raises :class:`InvalidInput` naming the field at fault."""
    extra = parse_json_box(box)
    form = form_for(action_type)
    if form is None:
        if not extra:
            raise InvalidInput("This action type has no form: write its payload as JSON, such as "
                               "{\"subject\": \"Hello\"}.", field="payload", code="missing")
        return extra
    payload = dict(extra)
    for field in form.fields:
        value = _typed(form, field, typed)
        if value is None:
            continue
        if field.key in extra and extra[field.key] != value:
            raise InvalidInput(f"{field.label} is typed in its field and given differently in the JSON payload's "
                               f"{field.key!r}; keep one of them", field=payload_field(field.key), code="conflict")
        payload[field.key] = value
    for keys in form.required:
        if not any(_given(payload.get(key)) for key in keys):
            names = " or ".join(form.field(key).called or form.field(key).label for key in keys)
            raise InvalidInput(f"{form.title} needs {names}: type it in its field",
                               field=payload_field(keys[0]), code="missing")
    return payload


def _given(value) -> bool:
    return bool(value.strip()) if isinstance(value, str) else value not in (None, [], {})


def form_values(action_type, payload) -> tuple[dict[str, str], dict]:
    """A stored payload as the builder shows it: each key a field can show, as typed (by input name), and the
    rest for the JSON box (a value a field cannot show, such as a number, stays there too)."""
    form = form_for(action_type)
    payload = payload if isinstance(payload, dict) else {}
    if form is None:
        return {}, dict(payload)
    typed, extra = {}, dict(payload)
    for field in form.fields:
        value = payload.get(field.key)
        if field.kind == MEDIA and isinstance(value, list) and value and all(
                isinstance(item, int) and not isinstance(item, bool) for item in value):
            typed[form.input_name(field)] = "\n".join(str(item) for item in value)
        elif (field.kind != MEDIA and isinstance(value, str) and value and value == value.strip() and "\r" not in value
              and (field.kind == TEXT or "\n" not in value)):
            typed[form.input_name(field)] = value
        else:
            continue
        del extra[field.key]
    return typed, extra


def input_names() -> list[str]:
    """Every form's input names, so a refused submission re-shows what was typed in each."""
    return [form.input_name(field) for form in FORMS.values() for field in form.fields]


__all__ = ["FORMS", "LINE", "MEDIA", "TEXT", "PayloadField", "PayloadForm", "check_placeholders", "form_for",
           "form_values", "input_names", "media_from_text", "parse_json_box", "payload_field", "payload_from_form"]
