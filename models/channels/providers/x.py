"""``x``: a post through X's API v2, ``POST {url}/2/tweets``, its media through the v2 chunked upload.

Channel config: optional ``url`` (the API base, default ``https://api.x.com``). Secret: the
connection's OAuth 2.0 user access token (Connect, or typed in), sent as a bearer token.
Payload: ``text`` or ``body``; its media come in ``Delivery.media``.

Each media item is uploaded before the post: ``POST /2/media/upload/initialize`` (type, size,
category), one ``POST /2/media/upload/{id}/append`` per chunk (multipart ``media`` and
``segment_index``), ``POST /2/media/upload/{id}/finalize``; while X says the file is
``pending`` or ``in_progress`` it is polled with ``GET /2/media/upload?command=STATUS``
after the ``check_after_secs`` X asks for (``context.sleep``). An image's or GIF's alt text
goes through ``POST /2/media/metadata``. Nothing is posted until every item is ready, so a
failure on the way is "not sent" (an uploaded item nobody posts expires at X).

A thread's item (a payload with ``reply_to``, models/posts/threads.py) is a reply to the post
before it: ``reply.in_reply_to_tweet_id`` is that post's id (``reply_to.parent``).

X honours no idempotency key: a post whose answer was lost fails as "outcome unknown" for a
person to check. A ``429`` waits until ``x-rate-limit-reset`` (epoch seconds); a ``401`` is a
token X no longer takes (the channel needs reconnecting); X's refusal of duplicate content
(``403``) is permanent.
"""

import json
import math
from datetime import datetime, timedelta, timezone

import httpx

from models.channels.providers import http
from models.channels.providers.accepts import (GIF, GIF_MIME, IMAGE, JPEG, MP4, PNG, QUICKTIME, UPLOAD, VIDEO, WEBP,
                                               Accepts, ImageRule, MediaRules, TextRule, VideoRule)
from models.channels.providers.base import Delivery, MediaFile, SendContext, SendOutcome, SendResult, payload_text
from models.channels.providers.oauth import REFRESH_GRANT, OAuthSpec
from models.core.egress import check_url, shown_text
from models.core.errors import InvalidInput
from models.timing.backoff import MAX_RETRY_AFTER, parse_retry_after

kind = "x"
honours_idempotency_key = False
DEFAULT_URL = "https://api.x.com"
MIB = 1024 * 1024
# X's media rules (docs.x.com, media best practices): images up to 5 MB, GIFs 15 MB, videos 512 MB
# and 0.5 to 140 s; four images, or one GIF or video; alt text up to 1,000 characters.
accepts = Accepts(
    text=(TextRule(280, "x_weighted"),),
    media=MediaRules(max_items=4, alt_max=1000, delivery=UPLOAD,
                     image=ImageRule(formats=frozenset({JPEG, PNG, WEBP}), max_bytes=5 * MIB, may_prepare=True),
                     gif=ImageRule(formats=frozenset({GIF_MIME}), max_bytes=15 * MIB),
                     video=VideoRule(formats=frozenset({MP4, QUICKTIME}), max_bytes=512 * MIB, max_seconds=140,
                                     min_seconds=0.5)),
)
# POST /2/tweets needs tweet.read and users.read beside tweet.write (X's authentication mapping);
# media.write for the upload, offline.access for a refresh token.
oauth = OAuthSpec(
    authorize_url="https://x.com/i/oauth2/authorize",
    token_url="https://api.x.com/2/oauth2/token",
    scopes=("tweet.read", "tweet.write", "users.read", "media.write", "offline.access"),
    refresh=REFRESH_GRANT,
    profile_path="/2/users/me?user.fields=profile_image_url",
)
CATEGORIES = {IMAGE: "tweet_image", GIF: "tweet_gif", VIDEO: "tweet_video"}
# X takes chunks up to 5 MB; a smaller one keeps each request well inside the provider timeout.
CHUNK_BYTES = 4 * MIB
WAITING_STATES = ("pending", "in_progress")
WHAT = "X"
# A post may be a reply to another (a thread's items).
replies = True


def validate_config(config: dict) -> None:
    """A url, if set, is an http(s) address the egress policy allows."""
    if "url" in config:
        check_url(config["url"], field="url")
    if "max_length" in config and not _whole(config["max_length"]):
        raise InvalidInput("max_length is a whole number of weighted characters.", field="settings",
                           code="bad_setting")


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Upload the media, then create the post; its id becomes the provider id."""
    text = payload_text(delivery.payload, "text", "body")
    if not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the x channel has no access token: connect it")
    if not text and not delivery.media:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'text' or 'body' to post")
    base = str(delivery.config.get("url") or DEFAULT_URL).rstrip("/")
    auth = {"Authorization": f"Bearer {delivery.secret}"}
    media_ids = []
    for number, item in enumerate(delivery.media, 1):
        uploaded = _upload(base, auth, item, number, context)
        if isinstance(uploaded, SendResult):
            return uploaded
        media_ids.append(uploaded)
    body: dict = {"text": text} if text else {}  # a post of media alone carries no text
    if media_ids:
        body["media"] = {"media_ids": media_ids}
    parent = _reply_parent(delivery.payload)
    if parent is not None:
        body["reply"] = {"in_reply_to_tweet_id": parent}
    response = http.post(context, base + "/2/tweets", json=body, headers=auth)
    if isinstance(response, SendResult):
        return response
    refused = refusal(response, context)
    if refused is not None:
        return refused
    data = _data(response)
    return SendResult.success(str(data["id"]) if data.get("id") not in (None, "") else None)


def _reply_parent(payload: dict) -> str | None:
    """The id of the post a thread's item answers (``reply_to.parent``), or None for a post of its own."""
    reply_to = payload.get("reply_to")
    parent = reply_to.get("parent") if isinstance(reply_to, dict) else None
    return str(parent) if isinstance(parent, (str, int)) and str(parent) else None


def refusal(response: httpx.Response, context: SendContext) -> SendResult | None:
    """The outcome of X's answer to a post, or None for a 2xx."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    detail = _detail(response)
    if status == 401:
        return SendResult(SendOutcome.PERMANENT, f"X refused the access token (401): it has expired or was revoked; "
                          f"reconnect the X channel{detail}", reconnect_needed=True)
    if status == 429:
        return SendResult(SendOutcome.RETRY_LATER, f"X answered 429, rate limit reached{detail}",
                          retry_after=rate_limit_reset(response, context.now))
    if status >= 500:
        return SendResult(SendOutcome.UNKNOWN, f"X answered {status}; it may or may not have posted{detail}")
    if 300 <= status < 400:
        return http.classify(response, context, what=WHAT)
    return SendResult(SendOutcome.PERMANENT, f"X refused the request ({status}){detail}")


def rate_limit_reset(response: httpx.Response, now: datetime) -> timedelta | None:
    """How long until ``x-rate-limit-reset`` (epoch seconds), else Retry-After; capped at Tickwork's longest wait."""
    reset = response.headers.get("x-rate-limit-reset", "").strip()
    if reset.isdecimal():
        at = datetime.fromtimestamp(int(reset), tz=timezone.utc)
        return min(max(at - now, timedelta(0)), MAX_RETRY_AFTER)
    return parse_retry_after(response.headers.get("Retry-After"), now)


def _upload(base: str, auth: dict, item: MediaFile, number: int, context: SendContext) -> str | SendResult:
    """Media item ``item`` uploaded, processed and described: its X media id, or why the post cannot go."""
    what = f"media item {number} (id {item.media_id})"
    started = _step(context, what, "initialize", http.post(
        context, base + "/2/media/upload/initialize", headers=auth,
        json={"media_type": item.mime, "total_bytes": len(item.data), "media_category": CATEGORIES[item.kind]}))
    if isinstance(started, SendResult):
        return started
    media_id = _data(started).get("id")
    if not media_id:
        return SendResult(SendOutcome.NOT_SENT, f"X did not give {what} an id when its upload was initialized")
    media_id = str(media_id)
    chunks = max(1, math.ceil(len(item.data) / CHUNK_BYTES))
    for index in range(chunks):
        chunk = item.data[index * CHUNK_BYTES:(index + 1) * CHUNK_BYTES]
        appended = _step(context, what, f"append (segment {index})", http.post(
            context, f"{base}/2/media/upload/{media_id}/append", headers=auth, data={"segment_index": str(index)},
            files={"media": ("media", chunk, "application/octet-stream")}))
        if isinstance(appended, SendResult):
            return appended
    finished = _step(context, what, "finalize", http.post(context, f"{base}/2/media/upload/{media_id}/finalize",
                                                          headers=auth))
    if isinstance(finished, SendResult):
        return finished
    ready = _processed(base, auth, media_id, _data(finished).get("processing_info"), what, context)
    if isinstance(ready, SendResult):
        return ready
    if item.alt and item.kind in (IMAGE, GIF):  # X describes images and GIFs, not videos
        described = _step(context, what, "alt text", http.post(context, base + "/2/media/metadata", headers=auth, json={
            "id": media_id, "metadata": {"alt_text": {"text": item.alt}}}))
        if isinstance(described, SendResult):
            return described
    return media_id


def _processed(base: str, auth: dict, media_id: str, info, what: str, context: SendContext) -> None | SendResult:
    """Wait while X processes an item (``check_after_secs`` each time, ``context.timeout`` in all)."""
    waited = 0.0
    while isinstance(info, dict) and info.get("state") in WAITING_STATES:
        wait = _seconds(info.get("check_after_secs"))
        if waited + wait > context.timeout:
            return SendResult(SendOutcome.NOT_SENT, f"X was still processing {what} after {waited:g}s; nothing was "
                              "posted, the upload starts again next attempt")
        context.sleep(wait)
        waited += wait
        status = _step(context, what, "status", http.call(context, "GET", base + "/2/media/upload", headers=auth,
                                                          params={"command": "STATUS", "media_id": media_id}))
        if isinstance(status, SendResult):
            return status
        info = _data(status).get("processing_info")
    if isinstance(info, dict) and info.get("state") == "failed":
        error = info.get("error") if isinstance(info.get("error"), dict) else {}
        reason = error.get("message") or error.get("name") or "no reason given"
        return SendResult(SendOutcome.PERMANENT, f"X could not process {what}: {reason}; nothing was posted")
    return None


def _step(context: SendContext, what: str, step: str, response) -> httpx.Response | SendResult:
    """One upload request's answer, or the outcome it means: before the post nothing can have been posted."""
    if isinstance(response, SendResult):
        if response.outcome is SendOutcome.UNKNOWN:  # an upload that may have landed posts nothing
            return SendResult(SendOutcome.NOT_SENT, f"{response.message} ({what}, {step}); nothing was posted")
        return response
    refused = refusal(response, context)
    if refused is None:
        return response
    if refused.outcome is SendOutcome.UNKNOWN:
        return SendResult(SendOutcome.NOT_SENT, f"X answered {response.status_code} to the {step} of {what}"
                          f"{_detail(response)}; nothing was posted")
    return SendResult(refused.outcome, f"{refused.message} ({what}, {step})", retry_after=refused.retry_after,
                      reconnect_needed=refused.reconnect_needed)


def _data(response: httpx.Response) -> dict:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    data = body.get("data") if isinstance(body, dict) else None
    return data if isinstance(data, dict) else {}


def _detail(response: httpx.Response) -> str:
    """X's own words: a problem's ``detail`` (or ``title``), else the first of its ``errors``."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict):
        errors = body.get("errors")
        first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
        for text in (first.get("message"), body.get("detail"), first.get("detail"), body.get("title")):
            if isinstance(text, str) and text.strip():
                return ": " + shown_text(text, 300)
    return http.error_detail(response)


def _seconds(value) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return 1.0


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def post_url(config: dict, provider_id: str) -> str | None:
    """The post on X: ``https://x.com/i/web/status/<id>`` (no handle needed)."""
    return f"https://x.com/i/web/status/{provider_id}" if provider_id.isascii() and provider_id.isdecimal() else None
