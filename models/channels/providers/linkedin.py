"""``linkedin``: a post through LinkedIn's Posts API, ``POST {url}/rest/posts``, as a member or an organization.

Channel config: ``author`` (``urn:li:person:<id>`` or ``urn:li:organization:<id>``, required),
optional ``url`` (the API base, default ``https://api.linkedin.com``) and ``linkedin_version``
(overrides the ``TICKWORK_LINKEDIN_VERSION`` setting for this channel). Secret: the
connection's OAuth 2.0 access token, sent as a bearer token. Payload: ``text`` or ``body``.

Every request carries ``LinkedIn-Version`` (YYYYMM; LinkedIn retires a version about a year
after it is published, and then answers 426: set ``TICKWORK_LINKEDIN_VERSION`` to a newer one)
and ``X-Restli-Protocol-Version: 2.0.0``. The commentary is Little Text Format, where
``\\ | { } @ [ ] ( ) < > # * _ ~`` are markup: the text is sent with each of them escaped, so it
reads exactly as written. Each image is registered with ``POST /rest/images?action=initializeUpload``
and its bytes ``PUT`` to the ``uploadUrl`` LinkedIn answers (through the same egress client;
the token goes with it only to LinkedIn's own hosts or the API base's), then the post names
the images (one: ``content.media``; 2 to 20: ``content.multiImage``). The post's URN comes
back in the ``x-restli-id`` header and becomes the provider id.

A post's first comment (a payload with ``comment_on``, the post's URN; models/posts/threads.py)
goes through the Comments API: ``POST {url}/rest/socialActions/{post URN, encoded}/comments``
with ``actor`` (the channel's author), ``object`` (the post's URN) and ``message.text``; the
comment's URN (``x-restli-id``, else the answer's ``commentUrn`` or ``id``) becomes the provider id.

LinkedIn honours no idempotency key: a post whose answer was lost fails as "outcome unknown".
A ``401`` (expired or revoked token) needs the channel reconnected: LinkedIn gives most apps no
refresh token.
"""

import json
import os
import re
from urllib.parse import quote
from datetime import datetime, timedelta

import httpx

from models.channels.providers import http
from models.channels.providers.accepts import (GIF_MIME, JPEG, PNG, UPLOAD, Accepts, ImageRule, MediaRules,
                                               TextRule)
from models.channels.providers.base import Delivery, MediaFile, SendContext, SendOutcome, SendResult, payload_text
from models.channels.providers.oauth import NO_REFRESH, OAuthSpec
from models.core.egress import check_url, shown_text
from models.core.errors import InvalidInput
from models.timing.backoff import MAX_RETRY_AFTER, parse_retry_after

kind = "linkedin"
honours_idempotency_key = False
DEFAULT_URL = "https://api.linkedin.com"
VERSION_SETTING = "TICKWORK_LINKEDIN_VERSION"
DEFAULT_VERSION = "202601"  # the latest version LinkedIn's versioning guide lists; supported for a year or more
# The Posts API: commentary up to 3,000 characters; a multi-image post has 2 to 20 images (JPEG, PNG, GIF),
# each with alt text up to 4,086 characters. Images in other formats are converted for it.
accepts = Accepts(
    text=(TextRule(3000),),
    media=MediaRules(max_items=20, alt_max=4086, delivery=UPLOAD,
                     image=ImageRule(formats=frozenset({JPEG, PNG}), may_prepare=True),
                     gif=ImageRule(formats=frozenset({GIF_MIME}))),
)
# A comment under a post (its first comment): text up to 1,250 characters, no media.
comments = Accepts(text=(TextRule(1250),), media=None)
MEMBER_SCOPES = ("w_member_social", "openid", "profile")
ORGANIZATION_SCOPES = ("w_organization_social", "openid", "profile")
oauth = OAuthSpec(
    authorize_url="https://www.linkedin.com/oauth/v2/authorization",
    token_url="https://www.linkedin.com/oauth/v2/accessToken",
    scopes=MEMBER_SCOPES,
    refresh=NO_REFRESH,
    profile_path="/v2/userinfo",
)
AUTHOR = re.compile(r"^urn:li:(person:[A-Za-z0-9_-]{1,64}|organization:[0-9]{1,20})$")
VERSION = re.compile(r"^20[0-9]{2}(0[1-9]|1[0-2])$")
# Little Text Format's reserved characters; the backslash is escaped too, so an escape can never be forged.
_LITTLE_RESERVED = re.compile(r"([\\|{}@\[\]()<>#*_~])")
WHAT = "LinkedIn"


def oauth_scopes(config: dict | None) -> tuple[str, ...]:
    """The scopes a channel's connection asks for: an organization's author posts with ``w_organization_social``."""
    author = str((config or {}).get("author") or "")
    return ORGANIZATION_SCOPES if author.startswith("urn:li:organization:") else MEMBER_SCOPES


def little_text(text: str) -> str:
    """``text`` as Little Text Format plain text: every reserved character backslash-escaped."""
    return _LITTLE_RESERVED.sub(r"\\\1", text)


def validate_config(config: dict) -> None:
    """``author`` is a person's or an organization's URN; ``url`` and ``linkedin_version``, if set, are usable."""
    author = config.get("author")
    if not isinstance(author, str) or not AUTHOR.match(author):
        raise InvalidInput("A linkedin channel posts as its author: urn:li:person:<id> for a member or "
                           "urn:li:organization:<number> for a company page.", field="author")
    if "url" in config:
        check_url(config["url"], field="url")
    if "linkedin_version" in config and not VERSION.match(str(config["linkedin_version"])):
        raise InvalidInput("linkedin_version is a LinkedIn API version as YYYYMM, like 202601.", field="settings",
                           code="bad_setting")


def api_version(config: dict) -> str:
    """The ``LinkedIn-Version`` a channel sends: its ``linkedin_version``, else the setting, else the default."""
    return str(config.get("linkedin_version") or os.environ.get("TICKWORK_LINKEDIN_VERSION") or DEFAULT_VERSION).strip()


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Upload the images, then create the post; its URN (``x-restli-id``) becomes the provider id."""
    config = delivery.config
    author = config.get("author")
    text = payload_text(delivery.payload, "text", "body")
    version = api_version(config)
    if not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the linkedin channel has no access token: connect it")
    if not isinstance(author, str) or not AUTHOR.match(author):
        return SendResult(SendOutcome.PERMANENT, "the linkedin channel has no author (urn:li:person:... or "
                                                 "urn:li:organization:...); nothing was sent")
    if not VERSION.match(version):
        return SendResult(SendOutcome.PERMANENT, f"{VERSION_SETTING} is {version[:20]!r}, not a LinkedIn API version "
                                                 "(YYYYMM); nothing was sent")
    if not text and not delivery.media:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'text' or 'body' to post")
    base = str(config.get("url") or DEFAULT_URL).rstrip("/")
    headers = {"Authorization": f"Bearer {delivery.secret}", "LinkedIn-Version": version,
               "X-Restli-Protocol-Version": "2.0.0"}
    if "comment_on" in delivery.payload:
        return _comment(delivery, context, base, headers, author, text or "", version)
    images = []
    for number, item in enumerate(delivery.media, 1):
        image = _upload(base, headers, author, item, number, context)
        if isinstance(image, SendResult):
            return image
        images.append({"id": image, "altText": item.alt} if item.alt else {"id": image})
    post = {
        "author": author,
        "commentary": little_text(text or ""),
        "visibility": "PUBLIC",
        "distribution": {"feedDistribution": "MAIN_FEED", "targetEntities": [], "thirdPartyDistributionChannels": []},
        "lifecycleState": "PUBLISHED",
        "isReshareDisabledByAuthor": False,
    }
    if len(images) == 1:
        post["content"] = {"media": images[0]}
    elif images:
        post["content"] = {"multiImage": {"images": images}}
    response = http.post(context, base + "/rest/posts", json=post, headers=headers)
    if isinstance(response, SendResult):
        return response
    refused = refusal(response, context, version)
    if refused is not None:
        return refused
    return SendResult.success(response.headers.get("x-restli-id") or None)


def _comment(delivery: Delivery, context: SendContext, base: str, headers: dict, author: str, text: str,
             version: str) -> SendResult:
    """A comment under the post whose URN is the payload's ``comment_on``, as the channel's author."""
    post = delivery.payload.get("comment_on")
    if not isinstance(post, str) or not post.startswith("urn:li:"):
        return SendResult(SendOutcome.PERMANENT, "the comment names no LinkedIn post URN to go under; nothing was sent")
    if delivery.media:
        return SendResult(SendOutcome.PERMANENT, "a LinkedIn first comment carries text only; nothing was sent")
    response = http.post(context, f"{base}/rest/socialActions/{quote(post, safe='')}/comments", headers=headers,
                         json={"actor": author, "object": post, "message": {"text": text}})
    if isinstance(response, SendResult):
        return response
    refused = refusal(response, context, version)
    if refused is not None:
        return refused
    body = _json(response)
    made = response.headers.get("x-restli-id") or body.get("commentUrn") or body.get("id")
    return SendResult.success(str(made) if made else None, "commented")


def refusal(response: httpx.Response, context: SendContext, version: str) -> SendResult | None:
    """The outcome of LinkedIn's answer, or None for a 2xx."""
    status = response.status_code
    if 200 <= status < 300:
        return None
    detail = _detail(response)
    if status == 401:
        return SendResult(SendOutcome.PERMANENT, f"LinkedIn refused the access token (401): it has expired or was "
                          f"revoked; reconnect the LinkedIn channel{detail}", reconnect_needed=True)
    if status == 429:
        return SendResult(SendOutcome.RETRY_LATER, f"LinkedIn answered 429, rate limit reached{detail}",
                          retry_after=retry_after(response, context.now))
    if status == 426:
        return SendResult(SendOutcome.PERMANENT, f"LinkedIn no longer serves API version {version} (426): set "
                          f"{VERSION_SETTING} to a current one{detail}")
    if status == 403:
        return SendResult(SendOutcome.PERMANENT, f"LinkedIn refused the post (403): the connection may lack the "
                          f"permission to post as this author{detail}")
    if status >= 500:
        return SendResult(SendOutcome.UNKNOWN, f"LinkedIn answered {status}; it may or may not have posted{detail}")
    if 300 <= status < 400:
        return http.classify(response, context, what=WHAT)
    return SendResult(SendOutcome.PERMANENT, f"LinkedIn refused the request ({status}){detail}")


def retry_after(response: httpx.Response, now: datetime) -> timedelta:
    """Retry-After when LinkedIn sends one; else its daily limits reset at midnight UTC (as far as Tickwork waits)."""
    asked = parse_retry_after(response.headers.get("Retry-After"), now)
    if asked is not None:
        return asked
    midnight = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return min(midnight - now, MAX_RETRY_AFTER)


def _upload(base: str, headers: dict, author: str, item: MediaFile, number: int,
            context: SendContext) -> str | SendResult:
    """Image ``item`` registered and its bytes uploaded: its ``urn:li:image``, or why the post cannot go."""
    what = f"media item {number} (id {item.media_id})"
    version = headers["LinkedIn-Version"]
    started = _step(context, what, "image registration", version, http.post(
        context, base + "/rest/images", params={"action": "initializeUpload"}, headers=headers,
        json={"initializeUploadRequest": {"owner": author}}))
    if isinstance(started, SendResult):
        return started
    value = _json(started).get("value")
    value = value if isinstance(value, dict) else {}
    upload_url, image = value.get("uploadUrl"), value.get("image")
    if not isinstance(upload_url, str) or not isinstance(image, str) or not upload_url:
        return SendResult(SendOutcome.NOT_SENT, f"LinkedIn gave {what} no uploadUrl and image URN; nothing was posted")
    put_headers = {"Content-Type": item.mime}
    if _ours(upload_url, base):
        put_headers["Authorization"] = headers["Authorization"]
    uploaded = _step(context, what, "upload", version, http.call(context, "PUT", upload_url, content=item.data,
                                                                  headers=put_headers))
    if isinstance(uploaded, SendResult):
        return uploaded
    return image


def _ours(url: str, base: str) -> bool:
    """Whether ``url`` is on LinkedIn's own hosts or the API base's host (then the token may go with it)."""
    try:
        host, base_host = httpx.URL(url).host, httpx.URL(base).host
    except httpx.InvalidURL:
        return False
    return host == base_host or host == "linkedin.com" or host.endswith(".linkedin.com")


def _step(context: SendContext, what: str, step: str, version: str, response) -> httpx.Response | SendResult:
    """One upload request's answer, or the outcome it means: before the post nothing can have been posted."""
    if isinstance(response, SendResult):
        if response.outcome is SendOutcome.UNKNOWN:
            return SendResult(SendOutcome.NOT_SENT, f"{response.message} ({what}, {step}); nothing was posted")
        return response
    refused = refusal(response, context, version)
    if refused is None:
        return response
    if refused.outcome is SendOutcome.UNKNOWN:
        return SendResult(SendOutcome.NOT_SENT, f"LinkedIn answered {response.status_code} to the {step} of {what}"
                          f"{_detail(response)}; nothing was posted")
    return SendResult(refused.outcome, f"{refused.message} ({what}, {step})", retry_after=refused.retry_after,
                      reconnect_needed=refused.reconnect_needed)


def _json(response: httpx.Response) -> dict:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return body if isinstance(body, dict) else {}


def _detail(response: httpx.Response) -> str:
    """LinkedIn's own words: its error's ``message`` (with its ``code``), else the body."""
    body = _json(response)
    message = body.get("message")
    if isinstance(message, str) and message.strip():
        code = body.get("code") or body.get("serviceErrorCode")
        return ": " + shown_text(f"{message} ({code})" if code else message, 300)
    return http.error_detail(response)


_POST_URN = re.compile(r"urn:li:(share|ugcPost|activity):[0-9]{1,30}")


def post_url(config: dict, provider_id: str) -> str | None:
    """The post on LinkedIn: ``https://www.linkedin.com/feed/update/<urn>``."""
    return f"https://www.linkedin.com/feed/update/{provider_id}" if _POST_URN.fullmatch(provider_id) else None
