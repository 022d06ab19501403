"""What providers tell us about contacts: Postmark's bounces and Twilio's inbound STOP, each proven first.

- **Postmark bounce webhook**, one public URL per channel:
  ``{TICKWORK_BASE_URL}/hooks/postmark/<channel id>/<token>/bounce``. Postmark does not sign
  its webhooks, so the URL carries the proof: ``token`` is an HMAC of the channel's id made
  with the channel's own secret (its server token), compared in constant time. A hard bounce
  (``HardBounce``, ``BadEmailAddress``) marks the contact ``bounced``; other records are
  acknowledged and ignored.
- **Twilio inbound webhook**, per channel: ``{TICKWORK_BASE_URL}/hooks/twilio/<channel id>/inbound``.
  Twilio signs each request: ``X-Twilio-Signature`` is the base64 HMAC-SHA1, keyed with the
  channel's auth token, of the URL Twilio called followed by every posted parameter, sorted
  by name, as name and value. The URL is ``TICKWORK_BASE_URL`` and the path, so it must be
  the address configured at Twilio. A body of STOP, STOPALL, UNSUBSCRIBE, CANCEL, END or QUIT
  (any case, surrounding spaces ignored) unsubscribes the contact with that phone number.

Answers never say whether a contact exists: a proven request is acknowledged either way.
"""

import base64
import hashlib
import hmac

HARD_BOUNCES = frozenset({"HardBounce", "BadEmailAddress"})
STOP_WORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"})
POSTMARK_PATH = "/hooks/postmark/{channel_id}/{token}/bounce"
TWILIO_PATH = "/hooks/twilio/{channel_id}/inbound"


def postmark_token(channel_id: int, secret: str) -> str:
    """The proof in a Postmark channel's bounce webhook URL, made with the channel's secret."""
    return hmac.new(secret.encode(), f"tickwork postmark bounces {channel_id}".encode(), hashlib.sha256).hexdigest()[:40]


def postmark_token_matches(channel_id: int, secret: str | None, given: str) -> bool:
    return bool(secret) and hmac.compare_digest(postmark_token(channel_id, secret), given or "")


def postmark_url(base_url: str, channel_id: int, secret: str) -> str:
    return base_url.rstrip("/") + POSTMARK_PATH.format(channel_id=channel_id, token=postmark_token(channel_id, secret))


def twilio_url(base_url: str, channel_id: int) -> str:
    return base_url.rstrip("/") + TWILIO_PATH.format(channel_id=channel_id)


def hard_bounce_email(record) -> str | None:
    """The address of a Postmark hard bounce record, or None for any other record."""
    if not isinstance(record, dict) or record.get("RecordType", "Bounce") != "Bounce":
        return None
    if record.get("Type") not in HARD_BOUNCES:
        return None
    email = record.get("Email")
    return email.strip().lower() if isinstance(email, str) and email.strip() else None


def twilio_signature(auth_token: str, url: str, params: list[tuple[str, str]]) -> str:
    """Twilio's signature of a request: base64 HMAC-SHA1 of the URL, then each parameter name in order
    followed by its value (a repeated name's distinct values in order), as Twilio's own libraries do."""
    values: dict[str, set[str]] = {}
    for name, value in params:
        values.setdefault(name, set()).add(value)
    data = url + "".join(name + value for name in sorted(values) for value in sorted(values[name]))
    return base64.b64encode(hmac.new(auth_token.encode(), data.encode(), hashlib.sha1).digest()).decode()


def twilio_signature_matches(auth_token: str | None, url: str, params: list[tuple[str, str]], given: str) -> bool:
    return bool(auth_token) and hmac.compare_digest(twilio_signature(auth_token, url, params), given or "")


def is_stop(body: str | None) -> bool:
    """An inbound SMS asking to stop."""
    return isinstance(body, str) and body.strip().upper() in STOP_WORDS
