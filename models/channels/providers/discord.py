"""``discord``: a message through a channel's webhook (Discord's Execute Webhook), with its images attached.

Discord gives a webhook as one URL, ``https://discord.com/api/webhooks/{id}/{token}``, and
whoever holds the token can post: so the channel's ``url`` is the webhook's URL *without* its
token (``https://discord.com/api/webhooks/{id}``) and its secret is the token, sealed like
every secret. Optional config ``allowed_mentions``: a list of ``everyone``, ``roles``,
``users``, the mentions a post may ping (none by default, so a post never pings @everyone).

``POST {url}/{token}?wait=true`` (so Discord answers with the message, whose id becomes the
provider id): JSON ``content`` and ``allowed_mentions``, or with media a multipart body of
``payload_json`` (the same, plus ``attachments: [{"id": n, "filename", "description": alt}]``)
and ``files[n]``. Discord honours no idempotency key, so an unknown outcome fails for a person.
"""

import json
import re
from dataclasses import replace
from datetime import timedelta

import httpx

from models.channels.providers import http
from models.channels.providers.accepts import (GIF_MIME, JPEG, MP4, PNG, QUICKTIME, UPLOAD, WEBP, Accepts, ImageRule,
                                               MediaRules, TextRule, VideoRule)
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text
from models.core.egress import check_url
from models.core.errors import InvalidInput
from models.timing.backoff import MAX_RETRY_AFTER

kind = "discord"
honours_idempotency_key = False
# 10 MiB per file is what a server without boosts takes; an image over it is downscaled for Discord.
FILE_BYTES = 10 * 1024 * 1024
accepts = Accepts(
    text=(TextRule(2000),),
    media=MediaRules(max_items=10, alt_max=1024, delivery=UPLOAD, video_alone=False,
                     image=ImageRule(formats=frozenset({JPEG, PNG, WEBP}), max_bytes=FILE_BYTES, may_prepare=True),
                     gif=ImageRule(formats=frozenset({GIF_MIME}), max_bytes=FILE_BYTES),
                     video=VideoRule(formats=frozenset({MP4, QUICKTIME, "video/webm"}), max_bytes=FILE_BYTES)),
)
MENTIONS = ("everyone", "roles", "users")
_TOKEN_IN_URL = re.compile(r"/webhooks/\d+/[^/?#]+")
# Discord's answers that mean the webhook is gone or its token no longer opens it: make a new one.
GONE = {401, 404}


def validate_config(config: dict) -> None:
    """The webhook's URL without its token, and mentions Discord knows."""
    url = config.get("url")
    if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
        raise InvalidInput("A discord channel needs its webhook's URL, https://discord.com/api/webhooks/ID.",
                           field="url")
    if _TOKEN_IN_URL.search(url):
        raise InvalidInput("Give the discord webhook's URL without its token (…/webhooks/ID); the token is the "
                           "channel's secret.", field="url")
    check_url(url, field="url")
    mentions = allowed_mentions(config)
    if mentions is None or any(item not in MENTIONS for item in mentions):
        raise InvalidInput(f"allowed_mentions lists the mentions a post may ping: {', '.join(MENTIONS)}.",
                           field="settings")


def allowed_mentions(config: dict) -> list[str] | None:
    """The mentions a post may ping: a list, or the dashboard's comma-separated text; None when neither."""
    mentions = config.get("allowed_mentions", [])
    if isinstance(mentions, str):
        mentions = [item.strip() for item in mentions.split(",") if item.strip()]
    return mentions if isinstance(mentions, list) else None


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Execute the webhook with the text and the media; the message's id becomes the provider id."""
    config = delivery.config
    content = payload_text(delivery.payload, "content", "text", "body")
    if not config.get("url") or not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the discord channel needs its webhook url and the webhook's token")
    if not content and not delivery.media:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'content', 'text' or 'body' to post")
    message = {"allowed_mentions": {"parse": allowed_mentions(config) or []}}
    if content:
        message["content"] = content
    url = f"{config['url'].rstrip('/')}/{delivery.secret}"
    if delivery.media:
        message["attachments"] = [{"id": n, "filename": item.filename, "description": item.alt}
                                  if item.alt else {"id": n, "filename": item.filename}
                                  for n, item in enumerate(delivery.media)]
        files = [(f"files[{n}]", (item.filename, item.data, item.mime)) for n, item in enumerate(delivery.media)]
        response = http.post(context, url, params={"wait": "true"}, files=files,
                             data={"payload_json": json.dumps(message, ensure_ascii=False)})
    else:
        response = http.post(context, url, params={"wait": "true"}, json=message)
    if isinstance(response, SendResult):  # the token is part of the URL: never let it into an operator's message
        return replace(response, message=response.message.replace(delivery.secret, "<token>"))
    refused = outcome_of(response, context)
    if refused is not None:
        return refused
    return SendResult.success(http.json_field(response, "id"))


def outcome_of(response: httpx.Response, context: SendContext) -> SendResult | None:
    """Discord's answer as an outcome, or None for a message posted."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    detail = http.error_detail(response)
    if status == 429:
        return SendResult(SendOutcome.RETRY_LATER, f"Discord is rate limiting this webhook (429){detail}",
                          retry_after=_retry_after(response))
    if status in GONE:
        return SendResult(SendOutcome.PERMANENT, f"Discord no longer knows this webhook or its token ({status})"
                                                 f"{detail}; make a new webhook and update the channel",
                          reconnect_needed=True)
    return http.classify(response, context, what="Discord")


def _retry_after(response: httpx.Response) -> timedelta | None:
    """The longest wait Discord asks for, in seconds: the body's ``retry_after``, ``X-RateLimit-Reset-After``
    or ``Retry-After``."""
    waits = []
    try:
        body = response.json()
        if isinstance(body, dict) and isinstance(body.get("retry_after"), (int, float)):
            waits.append(float(body["retry_after"]))
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    for header in ("X-RateLimit-Reset-After", "Retry-After"):
        try:
            waits.append(float(response.headers.get(header, "")))
        except ValueError:
            pass
    waits = [wait for wait in waits if wait >= 0]
    return min(timedelta(seconds=max(waits)), MAX_RETRY_AFTER) if waits else None


def post_url(config: dict, provider_id: str) -> str | None:
    """None: a message's link needs its server's and channel's ids, which a webhook's channel does not keep."""
    return None
