"""The access log without the secrets some addresses carry.

A public route proves itself with a token in its address (an unsubscribe link, a provider's
hook, a calendar feed, a pipeline callback, an invitation): logged whole, the address would
hand the token to whoever reads the log. Every route listed in :data:`webapp.public.PUBLIC_ROUTES`
has the variable parts of its path written as ``[redacted]`` in the access log (a row id,
an ``<int:...>`` part, stays) and its query string too, so a public route added to that list
is covered without a line here.

Both servers Tickwork runs under use it: gunicorn through :class:`GunicornAccessLogger`
(``tickwork serve`` passes it; ``gunicorn.conf.py`` names it for a gunicorn started by hand),
and the development server through a filter on the ``werkzeug`` logger.
"""

import logging
import re

from flask import Flask
from gunicorn.glogging import Logger as GunicornLogger

from webapp.public import PUBLIC_ROUTES

REDACTED = "[redacted]"
_VARIABLE = re.compile(r"<(?:(?P<converter>[a-zA-Z_][a-zA-Z0-9_]*)(?:\([^)]*\))?:)?(?P<name>[a-zA-Z_][a-zA-Z0-9_]*)>")
_patterns: list[re.Pattern] = []


def _pattern(rule: str) -> re.Pattern:
    """A rule (``/unsubscribe/<int:workspace_id>/<token>``) as a pattern whose groups are named
    ``keep_N`` (static text and row ids) or ``secret_N`` (anything else), then the query string."""
    parts, at = [], 0
    for n, variable in enumerate(_VARIABLE.finditer(rule)):
        parts.append(f"(?P<keep_s{n}>{re.escape(rule[at:variable.start()])})")
        if variable.group("converter") == "int":
            parts.append(f"(?P<keep_v{n}>\\d+)")
        else:
            parts.append(f"(?P<secret_{n}>[^/?#\\s\"]+?)")
        at = variable.end()
    parts.append(f"(?P<keep_end>{re.escape(rule[at:])})")
    return re.compile("".join(parts) + r"(?P<query>\?[^\s\"]*)?(?=[\s\"]|$)")


def token_patterns(app: Flask) -> list[re.Pattern]:
    """The patterns of every public route's rules that carry a variable part."""
    return [_pattern(rule.rule) for rule in app.url_map.iter_rules()
            if rule.endpoint in PUBLIC_ROUTES and (rule.arguments or "?" in rule.rule)]


def _redacted_match(match: re.Match) -> str:
    out = []
    for name, value in match.groupdict().items():
        if value is None:
            continue
        if name.startswith("keep"):
            out.append(value)
        elif name.startswith("secret"):
            out.append(REDACTED)
        elif name == "query":
            out.append("?" + REDACTED)
    return "".join(out)


def redact(text, patterns: list[re.Pattern] | None = None):
    """``text`` with the tokens of public routes' addresses (and their query strings) redacted."""
    if not isinstance(text, str):
        return text
    for pattern in _patterns if patterns is None else patterns:
        text = pattern.sub(_redacted_match, text)
    return text


class _RedactingFilter(logging.Filter):
    """Redacts the development server's request lines (``"GET /path HTTP/1.1" 200 -``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(redact(arg) for arg in record.args)
        record.msg = redact(record.msg)
        return True


class GunicornAccessLogger(GunicornLogger):
    """gunicorn's logger, its access lines redacted (every atom: the request line, the path, the
    query string, the referer, the environment's copies of them)."""

    def atoms(self, resp, req, environ, request_time):
        return {key: redact(value) for key, value in super().atoms(resp, req, environ, request_time).items()}


def init_app(app: Flask) -> None:
    """Learn the public routes' patterns (once every blueprint is registered) and filter the dev server's log."""
    _patterns[:] = token_patterns(app)
    werkzeug_log = logging.getLogger("werkzeug")
    if not any(isinstance(f, _RedactingFilter) for f in werkzeug_log.filters):
        werkzeug_log.addFilter(_RedactingFilter())
