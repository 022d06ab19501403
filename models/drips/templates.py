"""A step's subject and body: Jinja templates rendered in the sandbox, strictly, at mint time.

What a marketer writes runs in Jinja's immutable sandbox (no attribute of Python's insides,
no writes) with ``StrictUndefined``: a missing attribute is an error, never an empty string
in somebody's inbox. A render error fails the send for good before any provider call, as
"template: missing attribute 'plan'". What was rendered is what goes into the attempt's
payload, so what was sent is what is stored.

What a template sees:

| name              | what                                                             |
|-------------------|------------------------------------------------------------------|
| ``contact``       | ``name``, ``first_name``, ``email``, ``phone``, ``timezone``, ``attributes`` |
| ``attributes``    | the contact's attributes (a shortcut for ``contact.attributes``)  |
| ``campaign``      | ``name``                                                         |
| ``step``          | ``number`` (1-based)                                             |
| ``unsubscribe_url`` | the contact's one-click unsubscribe link (email steps)          |
"""

import re
from functools import lru_cache

from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, UndefinedError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from models.core.errors import InvalidInput

MAX_TEMPLATE = 20_000
MAX_RENDERED = 100_000
SAMPLE_CONTACT = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+15555550123", "timezone": None,
                  "attributes": {}}

_ENV = ImmutableSandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
_MISSING = (re.compile(r"has no attribute '([^']+)'"), re.compile(r"'([^']+)' is undefined"),
            re.compile(r"no element '?([^']+?)'?$"))


class TemplateProblem(Exception):
    """A template that does not render for this contact; ``message`` starts with "template:"."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@lru_cache(maxsize=1024)
def _compiled(source: str):
    return _ENV.from_string(source)


def check_template(source, field: str, *, required: bool = True) -> str | None:
    """A template that compiles, or :class:`InvalidInput` naming ``field`` and the line of the mistake."""
    if source is None or (isinstance(source, str) and not source.strip() and not required):
        if required:
            raise InvalidInput(f"{field} is required", field=field, code="missing")
        return None
    if not isinstance(source, str):
        raise InvalidInput(f"{field} must be a string", field=field, code="wrong_type")
    if not source.strip():
        raise InvalidInput(f"{field} must not be empty", field=field, code="missing")
    if "\x00" in source:
        raise InvalidInput(f"{field} must not contain NUL characters", field=field, code="bad_character")
    if len(source) > MAX_TEMPLATE:
        raise InvalidInput(f"{field} is longer than {MAX_TEMPLATE:,} characters", field=field, code="too_long")
    try:
        _compiled(source)
    except TemplateSyntaxError as exc:
        raise InvalidInput(f"{field} is not a valid template: {exc.message} (line {exc.lineno})", field=field,
                           code="bad_template") from None
    return source


def _missing_name(message: str) -> str | None:
    for pattern in _MISSING:
        found = pattern.search(message)
        if found:
            return found.group(1)
    return None


def render(source: str, context: dict) -> str:
    """``source`` rendered with ``context``; :class:`TemplateProblem` for anything that goes wrong."""
    try:
        text = _compiled(source).render(context)
    except UndefinedError as exc:
        name = _missing_name(str(exc))
        raise TemplateProblem(f"template: missing attribute {name!r}" if name else f"template: {exc}") from None
    except SecurityError as exc:
        raise TemplateProblem(f"template: not allowed: {exc}") from None
    except TemplateError as exc:
        raise TemplateProblem(f"template: {exc}") from None
    except Exception as exc:  # a marketer's expression ({{ 1 / 0 }}, a bad filter argument): theirs to fix
        raise TemplateProblem(f"template: {type(exc).__name__}: {exc}") from None
    if len(text) > MAX_RENDERED:
        raise TemplateProblem(f"template: the rendered text is {len(text):,} characters; at most {MAX_RENDERED:,}")
    return text


def contact_view(contact) -> dict:
    """What a template sees of a contact (a Contact row, or a dict shaped like :data:`SAMPLE_CONTACT`)."""
    get = contact.get if isinstance(contact, dict) else lambda name: getattr(contact, name)
    name = get("name") or ""
    return {"name": name, "first_name": name.split(" ")[0] if name else "", "email": get("email"),
            "phone": get("phone"), "timezone": get("timezone"), "attributes": dict(get("attributes") or {})}


def template_context(contact, *, campaign_name: str, step_number: int, unsubscribe_url: str | None) -> dict:
    """The names a step's templates may use (see the module docstring)."""
    seen = contact_view(contact)
    return {"contact": seen, "attributes": seen["attributes"], "campaign": {"name": campaign_name},
            "step": {"number": step_number}, "unsubscribe_url": unsubscribe_url}
