"""A step's subject and body: Jinja templates rendered in the sandbox, strictly, at mint time.

What a marketer writes runs in Jinja's immutable sandbox (no attribute of Python's insides,
no writes) with ``StrictUndefined``: a missing attribute is an error, never an empty string
in somebody's inbox. The sandbox has a budget (:mod:`models.core.sandbox`: characters and CPU
time, compiling included): a template over it is refused when saved (it is tried on a sample
contact, missing attributes allowed), at preview, and, should one slip past on a branch the
sample never took, at send time as "template: over its rendering budget: ...". A render error fails the send for good before any provider call, as
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

A template is read before it is saved (:func:`template_references`): a name outside this table
(``{{ contact.nonexistent }}``, ``{{ plan }}``) is refused at save and at activation, since every
contact would fail at that step; ``attributes.X`` is the marketer's own field, which some
contacts may lack, so a save says how many enrolled contacts lack it and offers ``default``
(``{{ attributes.plan | default('friend') }}``), which renders for everyone.
"""

import re
from functools import lru_cache

from dataclasses import dataclass, field as dataclass_field

from jinja2 import ChainableUndefined, StrictUndefined, TemplateError, TemplateSyntaxError, UndefinedError, nodes
from jinja2.sandbox import SecurityError

from models.core.errors import InvalidInput
from models.core.sandbox import BudgetedSandbox, OverBudget

MAX_TEMPLATE = 20_000
MAX_RENDERED = 100_000
SAMPLE_CONTACT = {"name": "Ada Lovelace", "email": "ada@example.com", "phone": "+15555550123", "timezone": None,
                  "attributes": {}}

_ENV = BudgetedSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
# What a template is tried with when saved: any attribute may be missing, only the budget counts.
_TRIAL_ENV = BudgetedSandbox(undefined=ChainableUndefined, autoescape=False, keep_trailing_newline=True)
_MISSING = (re.compile(r"has no attribute '([^']+)'"), re.compile(r"'([^']+)' is undefined"),
            re.compile(r"no element '?([^']+?)'?$"))


# What each name a template sees holds (the module docstring's table); attributes are free-form.
KNOWN_FIELDS = {
    "contact": frozenset({"name", "first_name", "email", "phone", "timezone", "attributes"}),
    "campaign": frozenset({"name"}),
    "step": frozenset({"number"}),
    "attributes": None,
    "unsubscribe_url": frozenset(),
}


_JINJA_OWN = frozenset({"loop", "self", "caller", "varargs", "kwargs"})


@dataclass
class References:
    """What a template refers to: names no contact can have, and attributes not guarded by ``default``."""

    unknown: list[str] = dataclass_field(default_factory=list)
    attributes: list[str] = dataclass_field(default_factory=list)


def _attribute_of(node) -> tuple[str, str] | None:
    """``(root, name)`` for ``root.name`` or ``root['name']`` on a top-level name."""
    if isinstance(node, nodes.Getattr) and isinstance(node.node, nodes.Name):
        return node.node.name, node.attr
    if (isinstance(node, nodes.Getitem) and isinstance(node.node, nodes.Name) and isinstance(node.arg, nodes.Const)
            and isinstance(node.arg.value, str)):
        return node.node.name, node.arg.value
    return None


def _contact_attribute(node) -> str | None:
    """``X`` for ``contact.attributes.X`` or ``attributes.X`` (either notation)."""
    if isinstance(node, (nodes.Getattr, nodes.Getitem)):
        name = node.attr if isinstance(node, nodes.Getattr) else (
            node.arg.value if isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str) else None)
        if name is None:
            return None
        inner = node.node
        if isinstance(inner, nodes.Name) and inner.name == "attributes":
            return name
        if _attribute_of(inner) == ("contact", "attributes"):
            return name
    return None


def template_references(source: str) -> References:
    """What ``source`` (a template that compiles) refers to; names it sets itself are its own."""
    tree = _ENV.parse(source)
    own = {target.name for target in tree.find_all(nodes.Name) if target.ctx in ("store", "param")}
    own |= {macro.name for macro in tree.find_all(nodes.Macro)}
    found = References()
    guarded: set[int] = set()
    for flt in tree.find_all(nodes.Filter):
        if flt.name in ("default", "d") and flt.node is not None:
            guarded.add(id(flt.node))
    for node in tree.find_all(nodes.Name):
        if node.ctx == "load" and node.name not in KNOWN_FIELDS and node.name not in own and node.name not in (
                _ENV.globals) and node.name not in _JINJA_OWN:
            found.unknown.append(node.name)
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        pair = _attribute_of(node)
        if pair is not None and pair[0] not in own:
            allowed = KNOWN_FIELDS.get(pair[0])
            if allowed is not None and pair[1] not in allowed:
                found.unknown.append(f"{pair[0]}.{pair[1]}")
        attribute = _contact_attribute(node)
        if attribute is not None and id(node) not in guarded and attribute not in found.attributes:
            found.attributes.append(attribute)
    found.unknown = list(dict.fromkeys(found.unknown))
    return found


def check_template_fields(source: str, field: str) -> None:
    """Refuse (422 naming ``field``) a template that refers to something no contact has."""
    unknown = template_references(source).unknown
    if unknown:
        raise InvalidInput(
            f"{field} refers to {unknown[0]!r}, which no contact has; a template may use contact.name, "
            "contact.first_name, contact.email, contact.phone, contact.timezone, attributes.<your field>, "
            "campaign.name, step.number and unsubscribe_url", field=field, code="unknown_field")


class TemplateProblem(Exception):
    """A template that does not render for this contact; ``message`` starts with "template:"."""

    def __init__(self, message: str, *, over_budget: bool = False):
        super().__init__(message)
        self.message = message
        self.over_budget = over_budget


@lru_cache(maxsize=1024)
def _compiled(source: str):
    return _ENV.from_string(source)


@lru_cache(maxsize=256)
def _trial_compiled(source: str):
    return _TRIAL_ENV.from_string(source)


def _tried_on_a_sample(source: str, field: str) -> None:
    """Refuse ``source`` when rendering it for the sample contact goes over the budget."""
    context = template_context(SAMPLE_CONTACT, campaign_name="Your campaign", step_number=1,
                               unsubscribe_url="https://tickwork.example/unsubscribe/1/sample")
    try:
        _TRIAL_ENV.render(_trial_compiled(source), context)
    except OverBudget as exc:
        raise InvalidInput(f"{field} is over the rendering budget: {exc.message}", field=field,
                           code="over_budget") from None
    except Exception:  # noqa: S110 (anything else depends on the contact; the send reports it)
        pass


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
    except RecursionError:
        raise InvalidInput(f"{field} is not a valid template: it nests too deeply", field=field,
                           code="bad_template") from None
    check_template_fields(source, field)
    _tried_on_a_sample(source, field)
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
        text = _ENV.render(_compiled(source), context)
    except OverBudget as exc:
        raise TemplateProblem(f"template: over its rendering budget: {exc.message}", over_budget=True) from None
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
