"""``webhook``: a signed JSON POST to the channel's URL.

Body: ``id``, ``action_type``, ``target_key``, ``payload``, ``publish_at`` (UTC, ``Z``),
``attempt``. Headers: ``Idempotency-Key: <action id>`` (the same on every attempt) and
``X-Tickwork-Signature: sha256=<hex HMAC-SHA256 of the body with the channel secret>``.
A channel without a secret sends no signature header.
"""

import hashlib
import hmac
import json

from models.channels.providers import http
from models.channels.providers.accepts import DEFAULT
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult

kind = "webhook"
honours_idempotency_key = True
accepts = DEFAULT  # the receiver gets the payload as it is: text up to 10,000 characters, media by id
SIGNATURE_HEADER = "X-Tickwork-Signature"


def body_bytes(delivery: Delivery) -> bytes:
    return json.dumps(
        {
            "id": delivery.action_id,
            "action_type": delivery.action_type,
            "target_key": delivery.target_key,
            "payload": delivery.payload,
            "publish_at": delivery.publish_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "attempt": delivery.attempt,
        },
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()


def signature(secret: str, body: bytes) -> str:
    """The value of the signature header for ``body``."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """POST the action to the channel's URL."""
    url = delivery.config.get("url")
    if not url:
        return SendResult(SendOutcome.NOT_SENT, "the webhook channel has no url")
    body = body_bytes(delivery)
    headers = {"Content-Type": "application/json", "Idempotency-Key": delivery.idempotency_key,
               "User-Agent": "Tickwork"}
    if delivery.secret:
        headers[SIGNATURE_HEADER] = signature(delivery.secret, body)
    response = http.post(context, url, content=body, headers=headers)
    if isinstance(response, SendResult):
        return response
    refused = http.classify(response, context, what="the webhook endpoint")
    if refused is not None:
        return refused
    return SendResult.success(http.json_field(response, "id") or response.headers.get("X-Request-Id"))
