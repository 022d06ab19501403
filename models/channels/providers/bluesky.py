"""``bluesky``: a post through the account's PDS over XRPC, under a record key Tickwork chooses.

Channel config: ``url`` (the PDS, default ``https://bsky.social``), ``handle`` (the account,
e.g. ``acme.bsky.social``). Secret: an app password. Payload: ``text``, ``status`` or
``body``, and ``media`` (library ids: up to 4 images, each with its alt text, prepared to
about 1,000,000 bytes for Bluesky only).

One send::

    com.atproto.server.createSession    handle + app password → access and refresh JWTs, the DID
                                        (kept per channel in this process; an ExpiredToken answer is
                                        met with com.atproto.server.refreshSession, then the call again)
    com.atproto.repo.uploadBlob         each image's bytes → its blob
    com.atproto.identity.resolveHandle  each @mention's handle → its DID (an unresolved one stays plain text)
    com.atproto.repo.createRecord       an app.bsky.feed.post with its facets (links, mentions, hashtags
                                        at UTF-8 byte offsets) and an app.bsky.embed.images embed (alt
                                        text, aspect ratio), or an app.bsky.embed.external card for a
                                        lone link; ``rkey`` is the row's TID (models/channels/providers/atproto.py)

A lone link's card is what its page says of itself (:mod:`.link_card`: og:title, og:description,
og:image, fetched through the egress policy within a few seconds and bytes); the image goes up
with ``uploadBlob`` first, prepared under ~1,000,000 bytes, as the card's ``thumb``. A page that
does not load still gets its card, the link as its title, without a thumbnail.

The **provider id** is the record's ``uri`` and ``cid`` separated by one space
(``at://did:plc:…/app.bsky.feed.post/3l… bafyrei…``): :func:`record_ref` splits it back, as a
reply needs both.

**Replies** (a thread's items, ``replies``): a payload with ``reply_to`` = ``{"root", "parent"}``
(provider ids of the thread's first post and of the post answered) makes the record's
``reply`` = ``{"root": {"uri", "cid"}, "parent": {"uri", "cid"}}``, as ``app.bsky.feed.post``
defines it.

**Asking before giving up.** The record key is the same on every attempt at a row, and a
repository holds one record per key, so no attempt can make a second post: the key is the
idempotency key (``honours_idempotency_key``). After an unknown outcome (a timeout, a 5xx)
:func:`settle` asks ``com.atproto.repo.getRecord`` for that key: there → published with its
uri and cid; ``RecordNotFound`` → never created, sent again with the same key. Today's PDS
answers a create whose key exists with a 500, and may answer with a 4xx: a later attempt's
refusal is settled by ``getRecord`` too before it counts.

| answer                                                         | outcome                                 |
|----------------------------------------------------------------|-----------------------------------------|
| 2xx                                                            | success (uri and cid)                   |
| 400 ``InvalidRequest`` and other 400s                          | permanent, Bluesky's words              |
| 400/401 ``ExpiredToken``                                       | session refreshed, the call made again  |
| 401 ``AuthenticationRequired`` (wrong app password), ``InvalidToken`` after a new session, ``AccountTakedown``, ``AuthFactorTokenRequired`` | permanent, reconnect needed |
| 413 (image too large)                                          | permanent                               |
| 429 (``ratelimit-reset``: epoch seconds)                       | retry later, at that time               |
| 5xx, timeout, reset during ``createRecord``                    | unknown: asked with ``getRecord``       |
| any failure before ``createRecord``                            | not sent (nothing was posted)           |
"""

import hashlib
import json
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import httpx

from models.channels.providers import http, link_card
from models.channels.providers.accepts import JPEG, PNG, UPLOAD, WEBP, Accepts, ImageRule, MediaRules, TextRule
from models.channels.providers.atproto import facets_of, is_handle, links_in, tid_for
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text
from models.channels.providers.images import CannotPrepare, prepare_image
from models.core.egress import check_url, shown_text
from models.core.errors import InvalidInput
from models.timing.backoff import MAX_RETRY_AFTER, parse_retry_after

kind = "bluesky"
# The record key, chosen from the row, is Bluesky's idempotency key: see the module docstring.
honours_idempotency_key = True
DEFAULT_URL = "https://bsky.social"
POST = "app.bsky.feed.post"
IMAGE_BYTES = 1_000_000
accepts = Accepts(
    # app.bsky.feed.post's text: maxGraphemes 300, maxLength 3000 (UTF-8 bytes).
    text=(TextRule(300, "graphemes"), TextRule(3000, "utf8_bytes")),
    media=MediaRules(max_items=4, alt_max=2000, delivery=UPLOAD,
                     image=ImageRule(formats=frozenset({JPEG, PNG, WEBP}), max_bytes=IMAGE_BYTES, may_prepare=True)),
)
WHAT = "Bluesky"
# A post may be a reply to another (a thread's items, models/posts/threads.py).
replies = True


def validate_config(config: dict) -> None:
    """A channel needs the account's handle; a PDS url, when set, must be one the egress policy allows."""
    handle = config.get("handle")
    if not isinstance(handle, str) or not is_handle(handle):
        raise InvalidInput("A bluesky channel needs the account's handle, such as handle = acme.bsky.social "
                           "(without the @).", field="settings")
    if "url" in config:
        check_url(config["url"], field="url")


def record_ref(provider_id: str) -> tuple[str, str]:
    """The ``(uri, cid)`` a Bluesky row's provider id holds."""
    uri, _, cid = provider_id.partition(" ")
    return uri, cid


def reply_refs(reply_to) -> dict | None:
    """The record's ``reply`` from a payload's ``reply_to`` (``{"root", "parent"}`` provider ids); None when either
    lacks its uri or cid."""
    if not isinstance(reply_to, dict):
        return None
    refs = {}
    for role in ("root", "parent"):
        given = reply_to.get(role)
        uri, cid = record_ref(given) if isinstance(given, str) else ("", "")
        if not uri.startswith("at://") or not cid:
            return None
        refs[role] = {"uri": uri, "cid": cid}
    return refs


@dataclass
class _Session:
    did: str
    access: str
    refresh: str


_sessions: dict[tuple, _Session] = {}
_sessions_lock = threading.Lock()


def _session_key(delivery: Delivery) -> tuple:
    secret = hashlib.sha256((delivery.secret or "").encode()).hexdigest()
    return delivery.channel_id, _base(delivery), delivery.config.get("handle"), secret


def _base(delivery: Delivery) -> str:
    return (delivery.config.get("url") or DEFAULT_URL).rstrip("/")


def _xrpc_url(delivery: Delivery, nsid: str) -> str:
    return f"{_base(delivery)}/xrpc/{nsid}"


def forget_sessions() -> None:
    """Drop every kept session (the next send signs in again)."""
    with _sessions_lock:
        _sessions.clear()
        _signing_in.clear()


class _Refused(Exception):
    """A step before createRecord ended the send: ``result`` says how."""

    def __init__(self, result: SendResult):
        self.result = result


def _error_name(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return ""
    return str(body.get("error") or "") if isinstance(body, dict) else ""


def _words(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if isinstance(body, dict) and (body.get("error") or body.get("message")):
        text = ": ".join(str(part) for part in (body.get("error"), body.get("message")) if part)
    else:
        text = response.text.strip()
    text = shown_text(text, 300)
    return f": {text}" if text else ""


def _rate_limited(response: httpx.Response, context: SendContext, step: str) -> SendResult:
    """A 429: retry once the window named by ``ratelimit-reset`` (epoch seconds) has passed."""
    retry_after = None
    reset = response.headers.get("ratelimit-reset", "").strip()
    if reset.isdecimal():
        at = datetime.fromtimestamp(int(reset), tz=timezone.utc)
        retry_after = min(max(at - context.now, timedelta(seconds=1)), MAX_RETRY_AFTER)
    else:
        retry_after = parse_retry_after(response.headers.get("Retry-After"), context.now)
    return SendResult(SendOutcome.RETRY_LATER, f"{WHAT} answered 429 to {step}, try later{_words(response)}",
                      retry_after=retry_after)


_ACCOUNT_ERRORS = {"AccountTakedown", "AuthFactorTokenRequired", "AuthenticationRequired", "InvalidToken"}


def _refusal(response: httpx.Response, context: SendContext, step: str, *, created: bool) -> SendResult:
    """What a non-2xx answer to ``step`` means; ``created`` says whether the step may have made the post."""
    status, error = response.status_code, _error_name(response)
    if status == 429:
        return _rate_limited(response, context, step)
    if error in _ACCOUNT_ERRORS or status in (401, 403):
        return SendResult(SendOutcome.PERMANENT, f"{WHAT} refused the account ({status} {step}){_words(response)}; "
                          "check the handle and the app password, then reconnect the channel", reconnect_needed=True)
    if status >= 500:
        if created:
            return SendResult(SendOutcome.UNKNOWN, f"{WHAT} answered {status} to {step}; the post may or may not "
                                                   f"have been made{_words(response)}")
        return SendResult(SendOutcome.NOT_SENT, f"{WHAT} answered {status} to {step}; nothing was posted"
                                                f"{_words(response)}")
    return SendResult(SendOutcome.PERMANENT, f"{WHAT} refused {step} ({status}){_words(response)}")


def _no_answer(result: SendResult, step: str, *, created: bool) -> SendResult:
    """A request that got no response: only a createRecord's may have made the post."""
    if result.outcome is SendOutcome.UNKNOWN and not created:
        return SendResult(SendOutcome.NOT_SENT, f"{result.message} ({step}); nothing was posted")
    return result


def _sign_in(delivery: Delivery, context: SendContext, *, refresh: _Session | None = None) -> _Session:
    """A new session (createSession), or a renewed one (refreshSession with ``refresh``'s refresh JWT)."""
    if refresh is not None:
        step = "com.atproto.server.refreshSession"
        response = http.post(context, _xrpc_url(delivery, step), headers={"Authorization": f"Bearer {refresh.refresh}"})
    else:
        step = "com.atproto.server.createSession"
        response = http.post(context, _xrpc_url(delivery, step),
                             json={"identifier": delivery.config.get("handle"), "password": delivery.secret})
    if isinstance(response, SendResult):
        raise _Refused(_no_answer(response, step, created=False))
    if response.status_code != 200:
        if refresh is not None and _error_name(response) in ("ExpiredToken", "InvalidToken"):
            return _sign_in(delivery, context)  # the refresh JWT too has run out: a new session
        raise _Refused(_refusal(response, context, step, created=False))
    body = response.json()
    session = _Session(did=body["did"], access=body["accessJwt"], refresh=body["refreshJwt"])
    with _sessions_lock:
        _sessions[_session_key(delivery)] = session
    return session


# One sign-in per channel at a time: the sends of a burst (32 threads at once) wait for the first one's
# session instead of each calling createSession, which Bluesky limits to 30 per five minutes per account.
_signing_in: dict[tuple, threading.Lock] = {}


def _session(delivery: Delivery, context: SendContext) -> _Session:
    key = _session_key(delivery)
    with _sessions_lock:
        kept = _sessions.get(key)
        signing_in = _signing_in.setdefault(key, threading.Lock())
    if kept is not None:
        return kept
    with signing_in:
        with _sessions_lock:
            kept = _sessions.get(key)
        return kept or _sign_in(delivery, context)


def _call(delivery: Delivery, context: SendContext, method: str, nsid: str, *, headers: dict | None = None,
          **request) -> httpx.Response | SendResult:
    """One authenticated XRPC call; an expired access token is refreshed (a session the PDS no longer knows is
    replaced by a new one) and the call made again, once."""
    session = _session(delivery, context)
    response: httpx.Response | SendResult | None = None
    for renewed in (False, True):
        response = http.call(context, method, _xrpc_url(delivery, nsid),
                                           headers={**(headers or {}), "Authorization": f"Bearer {session.access}"},
                                           **request)
        if isinstance(response, SendResult) or renewed or response.status_code not in (400, 401):
            return response
        error = _error_name(response)
        if error == "ExpiredToken":
            session = _sign_in(delivery, context, refresh=session)
        elif error == "InvalidToken" or response.status_code == 401:
            session = _sign_in(delivery, context)  # a kept session the PDS no longer knows: sign in again
        else:
            return response
    return response


def _resolver(delivery: Delivery, context: SendContext):
    def resolve(handle: str) -> str | None:
        response = http.get(context, _xrpc_url(delivery, "com.atproto.identity.resolveHandle"),
                            params={"handle": handle})
        if isinstance(response, SendResult) or response.status_code != 200:
            return None  # HandleNotFound, or no answer: the mention stays plain text
        did = http.json_field(response, "did")
        return did if did and did.startswith("did:") else None
    return resolve


def rkey_of(delivery: Delivery) -> str:
    """The row's record key (its TID): the same on every attempt."""
    if delivery.created_at is None:
        raise ValueError("a Bluesky delivery needs the row's created_at for its record key")
    return tid_for(delivery.created_at, delivery.action_id)


def _upload(delivery: Delivery, context: SendContext) -> list[dict]:
    images = []
    for number, item in enumerate(delivery.media, 1):
        step = f"com.atproto.repo.uploadBlob (image {number})"
        response = _call(delivery, context, "POST", "com.atproto.repo.uploadBlob", content=item.data,
                         headers={"Content-Type": item.mime})
        if isinstance(response, SendResult):
            raise _Refused(_no_answer(response, step, created=False))
        if response.status_code != 200:
            raise _Refused(_refusal(response, context, step, created=False))
        image = {"alt": item.alt or "", "image": response.json()["blob"]}
        if item.width and item.height:
            image["aspectRatio"] = {"width": item.width, "height": item.height}
        images.append(image)
    return images


def lone_link(text: str) -> str | None:
    """The post's one link, when it has exactly one (it gets a card)."""
    uris = list(dict.fromkeys(uri for _, _, uri in links_in(text)))
    return uris[0] if len(uris) == 1 else None


def _external(delivery: Delivery, context: SendContext, uri: str) -> dict:
    """The lone link's card: the page's own title, description and image (its thumbnail uploaded as a blob, prepared
    under Bluesky's ~1,000,000 bytes); a page that does not load gives the link as the title and no thumbnail."""
    card = link_card.card_for(uri, context, timeout=min(link_card.FETCH_TIMEOUT, context.timeout / 2))
    external = {"uri": uri, "title": card.title, "description": card.description}
    if card.image is None:
        return external
    rule = accepts.media.image
    data, mime = card.image, card.image_mime
    try:
        if len(data) > rule.max_bytes or mime not in rule.formats:
            data, _, _, mime = prepare_image(data, rule)
    except (CannotPrepare, OSError, ValueError):
        return external
    try:
        response = _call(delivery, context, "POST", "com.atproto.repo.uploadBlob", content=data,
                         headers={"Content-Type": mime})
    except _Refused:
        return external
    if not isinstance(response, SendResult) and response.status_code == 200:
        try:
            blob = response.json().get("blob")
        except (ValueError, AttributeError):
            blob = None
        if isinstance(blob, dict):
            external["thumb"] = blob
    return external


def post_record(text: str, *, now: datetime, images: list[dict], facets: list[dict],
                external: dict | None = None) -> dict:
    """The ``app.bsky.feed.post`` record: text, createdAt, facets, and an images embed or a lone link's card
    (``external``; without one, the link itself is the card's title)."""
    record: dict = {"$type": POST, "text": text, "createdAt": now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.")
                    + f"{now.microsecond // 1000:03d}Z"}
    if facets:
        record["facets"] = facets
    if images:
        record["embed"] = {"$type": "app.bsky.embed.images", "images": images}
    else:
        uri = lone_link(text)
        if uri is not None:
            record["embed"] = {"$type": "app.bsky.embed.external",
                               "external": external or {"uri": uri, "title": uri, "description": ""}}
    return record


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Post once under the row's record key; the record's uri and cid become the provider id."""
    config = delivery.config
    text = payload_text(delivery.payload, "text", "status", "body") or ""
    if not config.get("handle") or not delivery.secret:
        return SendResult(SendOutcome.NOT_SENT, "the bluesky channel needs the account's handle and an app password")
    if delivery.action_id is None:
        return _check_credentials(delivery, context)
    if not text and not delivery.media:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'text', 'status' or 'body' and no images to post")
    try:
        rkey = rkey_of(delivery)
        session = _session(delivery, context)
        images = _upload(delivery, context)
        facets = facets_of(text, _resolver(delivery, context)) if text else []
    except _Refused as refused:
        return refused.result
    uri = lone_link(text) if not images and text else None
    external = _external(delivery, context, uri) if uri is not None else None
    record = post_record(text, now=context.now, images=images, facets=facets, external=external)
    if "reply_to" in delivery.payload:
        reply = reply_refs(delivery.payload["reply_to"])
        if reply is None:
            return SendResult(SendOutcome.PERMANENT, "the reply's root and parent need each a record's uri and cid; "
                                                     "nothing was posted")
        record["reply"] = reply
    step = "com.atproto.repo.createRecord"
    try:
        response = _call(delivery, context, "POST", step,
                         json={"repo": session.did, "collection": POST, "rkey": rkey, "record": record})
    except _Refused as refused:  # the session could not be renewed: the create was never made
        return refused.result
    if isinstance(response, SendResult):
        return response
    if response.status_code == 200:
        return SendResult.success(_provider_id(response.json()))
    refused = _refusal(response, context, step, created=True)
    if delivery.attempt > 1 and refused.outcome is SendOutcome.PERMANENT and not refused.reconnect_needed:
        # An earlier attempt may have made the record under this key: ask before calling it refused.
        found = settle(delivery, context)
        if found is not None and found.outcome is SendOutcome.SUCCESS:
            return found
    return refused


def _check_credentials(delivery: Delivery, context: SendContext) -> SendResult:
    """A channel's test send: Bluesky has no drafts or private posts, so it signs in and posts nothing."""
    try:
        session = _sign_in(delivery, context)
    except _Refused as refused:
        return refused.result
    return SendResult.success(session.did, f"signed in as {delivery.config.get('handle')} ({session.did}); Bluesky "
                                           "has no private posts, so nothing was posted")


def _provider_id(body: dict) -> str:
    return f"{body['uri']} {body.get('cid') or ''}".strip()


def settle(delivery: Delivery, context: SendContext) -> SendResult | None:
    """Did an earlier attempt make the post? ``getRecord`` for the row's key: the record, not found, or None (no answer)."""
    try:
        rkey = rkey_of(delivery)
    except ValueError:
        return None
    with _sessions_lock:
        kept = _sessions.get(_session_key(delivery))
    repo = kept.did if kept else delivery.config.get("handle")
    if not repo:
        return None
    response = http.get(context, _xrpc_url(delivery, "com.atproto.repo.getRecord"),
                        params={"repo": repo, "collection": POST, "rkey": rkey})
    if isinstance(response, SendResult):
        return None
    if response.status_code == 200:
        body = response.json()
        return SendResult(SendOutcome.SUCCESS, "accepted", _provider_id(body),
                          asked=f"Bluesky has the post under record key {rkey} ({body.get('uri')})")
    if response.status_code == 400 and _error_name(response) == "RecordNotFound":
        return SendResult(SendOutcome.NOT_SENT, f"Bluesky has no post under record key {rkey}: it was never made; "
                                                "it is sent again under the same key",
                          asked=f"Bluesky has no post under record key {rkey}")
    return None


_RECORD_URI = re.compile(r"at://(did:[a-z]+:[A-Za-z0-9._:%-]{1,200})/app\.bsky\.feed\.post/([A-Za-z0-9._~:-]{1,512})")


def post_url(config: dict, provider_id: str) -> str | None:
    """The post in Bluesky's app: ``https://bsky.app/profile/<did>/post/<rkey>``, read off the record's ``at://`` uri."""
    uri, _ = record_ref(provider_id)
    found = _RECORD_URI.fullmatch(uri)
    return f"https://bsky.app/profile/{found[1]}/post/{found[2]}" if found else None
