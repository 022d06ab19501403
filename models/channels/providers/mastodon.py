"""``mastodon``: a status through ``POST {url}/api/v1/statuses``, with Mastodon's ``Idempotency-Key``.

Channel config: ``url`` (the instance, e.g. ``https://mastodon.social``), optional
``visibility``. Secret: an access token with ``write:statuses``. Payload: ``status``,
``text`` or ``body``. Mastodon de-duplicates on the key, so an unknown outcome is retried.
"""

from models.channels.providers import http
from models.channels.providers.accepts import (GIF_MIME, JPEG, MP4, PNG, QUICKTIME, UPLOAD, WEBP, Accepts, ImageRule,
                                               MediaRules, TextRule, VideoRule)
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text

kind = "mastodon"
honours_idempotency_key = True
# Mastodon 4's defaults (an instance may differ: a channel's ``max_length`` lowers the text limit).
accepts = Accepts(
    text=(TextRule(500, "links_as_23"),),
    media=MediaRules(max_items=4, alt_max=1500, delivery=UPLOAD,
                     image=ImageRule(formats=frozenset({JPEG, PNG, WEBP}), max_bytes=16 * 1024 * 1024,
                                     may_prepare=True),
                     gif=ImageRule(formats=frozenset({GIF_MIME}), max_bytes=16 * 1024 * 1024),
                     video=VideoRule(formats=frozenset({MP4, QUICKTIME, "video/webm"}), max_bytes=99 * 1024 * 1024)),
)


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
