"""The operator's alert settings, read from the environment once at start: rule settings and direct destinations.

| setting                          | what                                                                              |
|----------------------------------|-----------------------------------------------------------------------------------|
| ``TICKWORK_ALERT_RULES_JSON``    | rule → ``{"threshold", "window", "cooldown" (seconds), "enabled"}`` over the defaults |
| ``TICKWORK_ALERT_SMTP_URL``      | ``smtp://[user:password@]host[:port][?security=starttls|ssl|none]``: the relay instance alerts go through |
| ``TICKWORK_ALERT_EMAIL_TO``      | who the relay sends them to (comma-separated addresses: one message each)         |
| ``TICKWORK_ALERT_EMAIL_FROM``    | their sender (default ``tickwork@localhost``)                                      |
| ``TICKWORK_ALERT_WEBHOOK_URL``   | a URL instance alerts are POSTed to as JSON (the webhook channel's body and headers) |
| ``TICKWORK_ALERT_WEBHOOK_SECRET``| the key of that webhook's ``X-Tickwork-Signature``                                 |

A bad value stops the start with one line naming the setting. The destinations' addresses are
checked by the egress policy on every send, like any channel's.
"""

import json
from urllib.parse import parse_qs, unquote, urlsplit

from models.alerts.delivery import DirectDestination
from models.alerts.rules import RuleSettings, parse_rule_overrides
from models.core.errors import ConfigurationError

SECURITY = ("starttls", "ssl", "none")


def rule_settings(text: str | None) -> dict[str, RuleSettings]:
    try:
        return parse_rule_overrides(json.loads(text or "{}"))
    except ValueError as exc:
        raise ConfigurationError(f"TICKWORK_ALERT_RULES_JSON: {exc}") from None


def direct_destinations(environ: dict) -> list[DirectDestination]:
    """The operator's destinations named in ``environ`` (the app's settings)."""
    chosen = []
    smtp_url = environ.get("TICKWORK_ALERT_SMTP_URL")
    if smtp_url:
        to = [address.strip() for address in (environ.get("TICKWORK_ALERT_EMAIL_TO") or "").split(",")
              if address.strip()]
        if not to:
            raise ConfigurationError("TICKWORK_ALERT_SMTP_URL is set: TICKWORK_ALERT_EMAIL_TO must name who receives "
                                     "the alerts")
        config, password = _smtp(smtp_url)
        config["from"] = environ.get("TICKWORK_ALERT_EMAIL_FROM") or "tickwork@localhost"
        chosen += [DirectDestination("smtp", config, address, password) for address in to]
    webhook_url = environ.get("TICKWORK_ALERT_WEBHOOK_URL")
    if webhook_url:
        parts = urlsplit(webhook_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"TICKWORK_ALERT_WEBHOOK_URL {webhook_url!r}: expected an http(s) URL")
        chosen.append(DirectDestination("webhook", {"url": webhook_url}, "operator",
                                        environ.get("TICKWORK_ALERT_WEBHOOK_SECRET") or None))
    return chosen


def _smtp(url: str) -> tuple[dict, str | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme != "smtp" or not parts.hostname or port == -1:
        raise ConfigurationError(f"TICKWORK_ALERT_SMTP_URL {url!r}: expected smtp://[user:password@]host[:port]"
                                 "[?security=starttls|ssl|none]")
    query = parse_qs(parts.query)
    security = (query.get("security") or [None])[0]
    if security is not None and security not in SECURITY:
        raise ConfigurationError(f"TICKWORK_ALERT_SMTP_URL: security is one of {', '.join(SECURITY)}, not {security!r}")
    config = {"host": parts.hostname, "port": port or 587}
    if security:
        config["security"] = security
    if parts.username:
        config["username"] = unquote(parts.username)
    return config, unquote(parts.password) if parts.password else None
