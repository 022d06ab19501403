"""``postmark``: email through Postmark's HTTP API (``POST {url}/email``, ``X-Postmark-Server-Token``).

Channel config: ``from`` (sender), optional ``message_stream`` and ``url`` (default
``https://api.postmarkapp.com``). Secret: the server token. Payload: ``subject``,
``text`` or ``body``, optional ``html``, optional ``to`` (else the target key), optional
``headers`` (extra headers by name, such as ``List-Unsubscribe``).

Every message carries the action id in its metadata (``{"tickwork_action": "<id>"}``), so an
unknown outcome can be asked about: :func:`settle` searches Postmark's outbound messages
(``GET {url}/messages/outbound?count=1&offset=0&metadata_tickwork_action=<id>``). Found → the
row is published with its MessageID. Not found proves nothing while the search lags behind
sending, so until ``settle_delay`` (``TICKWORK_POSTMARK_SETTLE_MINUTES``, 5 by default) has passed
since the send the row stays submitted and dead-worker recovery asks again on a later pass (no
clock job of its own: recovery already runs with every tick); after it, the row is failed as
"outcome unknown" for a person. Postmark has no idempotency key, so a row is never re-sent on
its own (models/clock/settling.py).
"""

from datetime import timedelta

from models.channels.providers import http
from models.channels.providers.accepts import Accepts, TextRule
from models.channels.providers.base import (
    BadHeaders,
    Delivery,
    SendContext,
    SendOutcome,
    SendResult,
    payload_headers,
    payload_text,
)

kind = "postmark"
honours_idempotency_key = False
accepts = Accepts(text=(TextRule(10_000),), media=None)  # a message's text; attachments are not sent
DEFAULT_URL = "https://api.postmarkapp.com"
WHAT = "Postmark"
METADATA_KEY = "tickwork_action"
# How long Postmark's outbound search may lag behind a send: "not found" means "not yet" until then.
settle_delay = timedelta(minutes=5)


def configure(settle_minutes: int) -> None:
    """Set the settle delay (``TICKWORK_POSTMARK_SETTLE_MINUTES``); the app factory calls this at start-up."""
    global settle_delay
    settle_delay = timedelta(minutes=settle_minutes)


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Send one email; Postmark's MessageID becomes the provider id."""
    config, payload = delivery.config, delivery.payload
    to = payload_text(payload, "to") or delivery.target_key
    sender = payload_text(payload, "from") or config.get("from")
    text = payload_text(payload, "text", "body")
    html = payload_text(payload, "html")
    if not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the postmark channel has no server token")
    if not sender:
        return SendResult(SendOutcome.NOT_SENT, "no sender: set the channel's 'from' or the payload's 'from'")
    if not (text or html):
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'text', 'body' or 'html' to send")
    message = {"From": sender, "To": to, "Subject": payload_text(payload, "subject") or ""}
    if text:
        message["TextBody"] = text
    if html:
        message["HtmlBody"] = html
    if config.get("message_stream"):
        message["MessageStream"] = config["message_stream"]
    try:
        extra = payload_headers(payload)
    except BadHeaders as exc:
        return SendResult(SendOutcome.NOT_SENT, str(exc))
    message["Headers"] = [{"Name": "X-Tickwork-Action", "Value": delivery.idempotency_key}] + [
        {"Name": name, "Value": value} for name, value in extra]
    message["Metadata"] = {METADATA_KEY: delivery.idempotency_key}
    url = config.get("url", DEFAULT_URL).rstrip("/") + "/email"
    response = http.post(context, url, json=message, headers={
        "Accept": "application/json", "X-Postmark-Server-Token": delivery.secret})
    if isinstance(response, SendResult):
        return response
    refused = http.classify(response, context, what="Postmark")
    if refused is not None:
        return refused
    return SendResult.success(http.json_field(response, "MessageID"))


def settle(delivery: Delivery, context: SendContext) -> SendResult | None:
    """Did Postmark take the message? Its outbound search by the action's metadata: found, or None (not yet, or no answer)."""
    if not delivery.secret:
        return None
    url = delivery.config.get("url", DEFAULT_URL).rstrip("/") + "/messages/outbound"
    response = http.get(context, url, params={"count": 1, "offset": 0, f"metadata_{METADATA_KEY}": delivery.idempotency_key},
                        headers={"Accept": "application/json", "X-Postmark-Server-Token": delivery.secret})
    if isinstance(response, SendResult) or response.status_code != 200:
        return None
    try:
        messages = response.json().get("Messages") or []
    except (ValueError, AttributeError):
        return None
    for message in messages:
        if isinstance(message, dict) and message.get("MessageID") and (
                (message.get("Metadata") or {}).get(METADATA_KEY, delivery.idempotency_key) == delivery.idempotency_key):
            return SendResult(SendOutcome.SUCCESS, "accepted", str(message["MessageID"]),
                              asked=f"Postmark has the message as {message['MessageID']}")
    return None
