"""``mastodon``: a status through ``POST {url}/api/v1/statuses``, with Mastodon's ``Idempotency-Key``.

Channel config: ``url`` (the instance, e.g. ``https://mastodon.social``), optional
``visibility``. Secret: an access token with ``write:statuses``. Payload: ``status``,
``text`` or ``body``. Mastodon de-duplicates on the key, so an unknown outcome is retried.
"""

from models.channels.providers import http
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text

kind = "mastodon"
honours_idempotency_key = True


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Post one status; its id becomes the provider id."""
    config, payload = delivery.config, delivery.payload
    status = payload_text(payload, "status", "text", "body")
    if not config.get("url") or not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the mastodon channel needs the instance url and an access token")
    if not status:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'status', 'text' or 'body' to post")
    form = {"status": status}
    if config.get("visibility"):
        form["visibility"] = config["visibility"]
    response = http.post(context, config["url"].rstrip("/") + "/api/v1/statuses", data=form, headers={
        "Authorization": f"Bearer {delivery.secret}", "Idempotency-Key": delivery.idempotency_key})
    if isinstance(response, SendResult):
        return response
    refused = http.classify(response, context, what="the Mastodon server")
    if refused is not None:
        return refused
    return SendResult.success(http.json_field(response, "id"))
