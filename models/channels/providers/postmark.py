"""``postmark``: email through Postmark's HTTP API (``POST {url}/email``, ``X-Postmark-Server-Token``).

Channel config: ``from`` (sender), optional ``message_stream`` and ``url`` (default
``https://api.postmarkapp.com``). Secret: the server token. Payload: ``subject``,
``text`` or ``body``, optional ``html``, optional ``to`` (else the target key), optional
``headers`` (extra headers by name, such as ``List-Unsubscribe``).
"""

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
    url = config.get("url", DEFAULT_URL).rstrip("/") + "/email"
    response = http.post(context, url, json=message, headers={
        "Accept": "application/json", "X-Postmark-Server-Token": delivery.secret})
    if isinstance(response, SendResult):
        return response
    refused = http.classify(response, context, what="Postmark")
    if refused is not None:
        return refused
    return SendResult.success(http.json_field(response, "MessageID"))
