"""``mastodon``: a status through ``POST {url}/api/v1/statuses``, with Mastodon's ``Idempotency-Key``, and its media.

Channel config: ``url`` (the instance, e.g. ``https://mastodon.social``), optional
``visibility``. Secret: an access token with ``write:statuses`` and ``write:media``.
Payload: ``status``, ``text`` or ``body``, sent verbatim; its media arrive in
``Delivery.media``. Mastodon de-duplicates on the key, so an unknown outcome is retried.

Media go first, one ``POST {url}/api/v2/media`` each (``file``, ``description`` = the item's
alt text): a 200 is ready, a 202 is still being processed, and ``GET /api/v1/media/:id`` is
then asked again (206 while processing, 200 when ready) with ``context.sleep`` between asks,
all the waits together within ``context.timeout``. The status names them in ``media_ids[]``.
Until the status is posted nothing is public: a media upload that fails or is still being
processed at the end ends the send as not sent (or permanent, for a file the instance refuses).

A thread's item (a payload with ``reply_to``, models/posts/threads.py) is a reply to the status
before it: ``in_reply_to_id`` is that status's id (``reply_to.parent``).

When the channel is saved, the instance's own limits are read from ``GET {url}/api/v2/instance``
(``configuration.statuses``) into the channel's settings: ``max_length`` (the text limit the
checks at save use), ``max_media_attachments`` and ``characters_reserved_per_url``. An
instance that cannot be reached then keeps the defaults below; the save goes on.
"""

import json
import re

import httpx

from models.channels.providers import http
from models.channels.providers.accepts import (GIF_MIME, JPEG, MP4, PNG, QUICKTIME, UPLOAD, WEBP, Accepts, ImageRule,
                                               MediaRules, TextRule, VideoRule)
from models.channels.providers.base import Delivery, MediaFile, SendContext, SendOutcome, SendResult, payload_text
from models.core.egress import DestinationRefused

kind = "mastodon"
honours_idempotency_key = True
# Mastodon 4's defaults; an instance's own limits (read when the channel is saved) replace the text
# limit, lower or higher, and may lower the number of media items.
accepts = Accepts(
    text=(TextRule(500, "links_as_23"),),
    media=MediaRules(max_items=4, alt_max=1500, delivery=UPLOAD,
                     image=ImageRule(formats=frozenset({JPEG, PNG, WEBP}), max_bytes=16 * 1024 * 1024,
                                     may_prepare=True),
                     gif=ImageRule(formats=frozenset({GIF_MIME}), max_bytes=16 * 1024 * 1024),
                     video=VideoRule(formats=frozenset({MP4, QUICKTIME, "video/webm"}), max_bytes=99 * 1024 * 1024)),
    config_limit_may_raise=True,
)
# The instance's configuration.statuses keys, as the channel's settings keep them.
INSTANCE_SETTINGS = {"max_characters": "max_length", "max_media_attachments": "max_media_attachments",
                     "characters_reserved_per_url": "characters_reserved_per_url"}
INSTANCE_TIMEOUT = 3.0  # seconds; the save waits at most this for the instance
FIRST_POLL = 0.5  # seconds before the first ask about a media item still being processed; doubled up to MAX_POLL
MAX_POLL = 4.0
# A status may answer another (a thread's items).
replies = True


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Upload the media, then post one status naming them; its id becomes the provider id."""
    config, payload = delivery.config, delivery.payload
    status = payload_text(payload, "status", "text", "body")
    if not config.get("url") or not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the mastodon channel needs the instance url and an access token")
    if not status and not delivery.media:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'status', 'text' or 'body' to post")
    base = config["url"].rstrip("/")
    auth = {"Authorization": f"Bearer {delivery.secret}"}
    media_ids = []
    for number, item in enumerate(delivery.media, 1):
        uploaded = _upload(base, auth, item, number, context)
        if isinstance(uploaded, SendResult):
            return uploaded
        media_ids.append(uploaded)
    form = {"status": status} if status else {}
    if media_ids:
        form["media_ids[]"] = media_ids
    if config.get("visibility"):
        form["visibility"] = config["visibility"]
    reply_to = payload.get("reply_to")
    if isinstance(reply_to, dict) and reply_to.get("parent"):
        form["in_reply_to_id"] = str(reply_to["parent"])
    response = http.post(context, base + "/api/v1/statuses", data=form,
                         headers={**auth, "Idempotency-Key": delivery.idempotency_key})
    if isinstance(response, SendResult):
        return response
    refused = _classify(response, context, "the Mastodon server")
    if refused is not None:
        return refused
    return SendResult.success(http.json_field(response, "id"))


def _classify(response: httpx.Response, context: SendContext, what: str) -> SendResult | None:
    refused = http.classify(response, context, what=what)
    if refused is not None and response.status_code == 401:  # the token was revoked or the app removed
        return SendResult(SendOutcome.PERMANENT, refused.message, reconnect_needed=True)
    return refused


def _upload(base: str, auth: dict, item: MediaFile, number: int, context: SendContext) -> str | SendResult:
    """The id of ``item`` once the instance has it ready, or why the send stops (nothing was posted)."""
    what = f"the Mastodon server (media item {number})"
    form = {"description": item.alt} if item.alt else {}
    response = http.post(context, base + "/api/v2/media", data=form, headers=auth,
                         files={"file": (item.filename, item.data, item.mime)})
    if isinstance(response, SendResult):
        return _before_the_status(response)
    refused = _classify(response, context, what)
    if refused is not None:
        return _before_the_status(refused)
    media_id = http.json_field(response, "id")
    if media_id is None:
        return SendResult(SendOutcome.NOT_SENT, f"{what} answered {response.status_code} without a media id; "
                                                "nothing was posted")
    if response.status_code == 202:
        return _until_processed(base, auth, media_id, what, context)
    return media_id


def _until_processed(base: str, auth: dict, media_id: str, what: str, context: SendContext) -> str | SendResult:
    """Ask about a media item the instance is still processing until it is ready, within ``context.timeout``
    of waits in all."""
    waited, delay = 0.0, FIRST_POLL
    while waited < context.timeout:
        pause = min(delay, context.timeout - waited)
        context.sleep(pause)
        waited += pause
        delay = min(delay * 2, MAX_POLL)
        response = http.call(context, "GET", f"{base}/api/v1/media/{media_id}", headers=auth)
        if isinstance(response, SendResult):
            return _before_the_status(response)
        if response.status_code == 200:
            return media_id
        if response.status_code != 206:
            refused = _classify(response, context, what)
            return _before_the_status(refused or SendResult(
                SendOutcome.NOT_SENT, f"{what} answered {response.status_code} about media {media_id}"))
    return SendResult(SendOutcome.NOT_SENT, f"{what} was still processing media {media_id} after {waited:g}s; "
                                            "nothing was posted")


def _before_the_status(result: SendResult) -> SendResult:
    """A media step's failure: no status was posted, so an answer in doubt is a send that did not happen."""
    if result.outcome is SendOutcome.UNKNOWN:
        return SendResult(SendOutcome.NOT_SENT, f"{result.message}; no status was posted")
    if result.outcome is SendOutcome.PERMANENT:
        return SendResult(result.outcome, f"{result.message}; no status was posted", retry_after=result.retry_after,
                          reconnect_needed=result.reconnect_needed)
    return result


def read_at_save(config: dict, secret: str | None, context: SendContext) -> dict:
    """The instance's own limits as channel settings (``max_length``...), or nothing when it cannot be asked.

    Called when the channel is saved, before its write transaction (the instance's answer needs no
    token and replaces these settings on every save).
    """
    url = config.get("url")
    if not isinstance(url, str) or not url:
        return {}
    try:
        response = context.http.get(url.rstrip("/") + "/api/v2/instance", timeout=min(INSTANCE_TIMEOUT, context.timeout))
        statuses = response.json()["configuration"]["statuses"] if response.status_code == 200 else None
    except (httpx.HTTPError, DestinationRefused, json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
        return {}
    if not isinstance(statuses, dict):
        return {}
    return {setting: statuses[key] for key, setting in INSTANCE_SETTINGS.items()
            if isinstance(statuses.get(key), int) and not isinstance(statuses[key], bool) and statuses[key] > 0}


def post_url(config: dict, provider_id: str) -> str | None:
    """The status on its instance's web app (``{url}/statuses/{id}``, which opens it whoever wrote it)."""
    base = config.get("url")
    if not isinstance(base, str) or not base.startswith(("https://", "http://")) or not _STATUS_ID.fullmatch(provider_id):
        return None
    return f"{base.rstrip('/')}/statuses/{provider_id}"


_STATUS_ID = re.compile(r"[0-9A-Za-z]{1,40}")
