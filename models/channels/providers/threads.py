"""``threads``: a post through the Threads API: a media container, its status polled until ``FINISHED``, then ``threads_publish``.

Channel config: ``url`` (the Graph API base, default ``https://graph.threads.net/v1.0``),
``user_id`` (the Threads user id, default ``me``). Secret: a Threads user access token with
``threads_basic`` and ``threads_content_publish`` (the channel's Connect button gets one).
Payload: ``body`` (or ``text``, ``status``) and ``media``, which Threads fetches itself from a
signed link to each item under TICKWORK_BASE_URL.

A text post is one ``TEXT`` container; one image or video is an ``IMAGE`` or ``VIDEO``
container with its ``alt_text``; two to twenty items are item containers
(``is_carousel_item``) and a ``CAROUSEL`` container naming them as ``children``. The container's
``status`` is read until ``FINISHED`` (waiting with ``context.sleep``, within the send's
timeout), then ``POST /{user-id}/threads_publish`` with its ``creation_id`` answers the post's
id. Errors: :mod:`.meta_graph`. A thread's item (a payload with ``reply_to``, models/posts/threads.py) is a reply: its container
carries ``reply_to_id``, the id of the post before it (``reply_to.parent``; replying needs the
``threads_manage_replies`` permission).

Threads has no idempotency key: only the publishing call can
end in "outcome unknown".
"""

from models.channels.providers import meta_graph
from models.channels.providers.accepts import JPEG, MP4, PNG, QUICKTIME, URL, Accepts, ImageRule, MediaRules, \
    TextRule, VideoRule
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text
from models.channels.providers.oauth import THREADS_REFRESH, OAuthSpec
from models.core.egress import check_url

kind = "threads"
honours_idempotency_key = False
NETWORK = "Threads"
DEFAULT_URL = "https://graph.threads.net/v1.0"
MAX_CAROUSEL = 20
# A post may answer another (a thread's items).
replies = True
STEPS = meta_graph.TwoSteps(NETWORK, "threads", "threads_publish", text_field="text", status_field="status",
                             error_field="error_message")
# Threads' media specifications: JPEG or PNG up to 8 MB with an aspect ratio within 10:1 (narrower
# or wider ones are refused; Threads scales the width to 320-1440 px itself), MP4 or MOV video up to
# 1 GB and 5 minutes. Carousels mix images and videos. Alt text is sent as ``alt_text``; Threads
# states no length for it.
accepts = Accepts(
    text=(TextRule(500, "emoji_as_utf8"),),  # 500 characters, an emoji counting its UTF-8 bytes
    media=MediaRules(max_items=MAX_CAROUSEL, delivery=URL, video_alone=False,
                     image=ImageRule(formats=frozenset({JPEG, PNG}), max_bytes=8 * 1000 * 1000, aspect=(0.1, 10.0),
                                     may_prepare=True),
                     video=VideoRule(formats=frozenset({MP4, QUICKTIME}), max_bytes=1000 * 1000 * 1000,
                                     max_seconds=300)),
)
oauth = OAuthSpec(
    authorize_url="https://threads.net/oauth/authorize",
    token_url="https://graph.threads.net/oauth/access_token",
    scopes=("threads_basic", "threads_content_publish", "threads_manage_replies"),
    refresh=THREADS_REFRESH,  # a long-lived token (60 days) renewed with GET /refresh_access_token
    profile_path="/me?fields=id,username,threads_profile_picture_url",
    api_url="https://graph.threads.net",
    token_endpoint_auth_method="client_secret_post",  # client_id and client_secret in the form, as Threads documents
    scope_separator=",",
)


def finish_connect(answer: dict, *, http, client_id: str, client_secret: str, config: dict, token_url: str,
                   api_url: str) -> dict:
    """The code's one-hour token traded for a 60-day one (``th_exchange_token``), which the clock job renews."""
    return meta_graph.long_lived_token(answer, http=http, url=f"{api_url}/access_token", network=NETWORK,
                                       params={"grant_type": "th_exchange_token", "client_secret": client_secret})


def validate_config(config: dict) -> None:
    """The Graph API base must pass the egress policy; ``user_id`` is a numeric id or ``me``."""
    if "url" in config:
        check_url(config["url"], field="url")
    meta_graph.check_node_id(config, "user_id")


def _item(item, *, carousel: bool) -> dict | SendResult:
    if not item.url:
        return SendResult(SendOutcome.PERMANENT, f"media item {item.media_id} has no link for Threads to fetch; "
                                                 "nothing was sent")
    form = {"media_type": "VIDEO", "video_url": item.url} if item.kind == "video" else \
        {"media_type": "IMAGE", "image_url": item.url}
    if item.alt:
        form["alt_text"] = item.alt
    if carousel:
        form["is_carousel_item"] = "true"
    return form


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Create the post's container (and its items'), wait until Threads has it ready, publish it."""
    config, token = delivery.config, delivery.secret
    user = meta_graph.node_id(config, "user_id", "me")
    text = payload_text(delivery.payload, "body", "text", "status")
    media = list(delivery.media)
    if not token:
        return SendResult(SendOutcome.NOT_SENT, "the threads channel has no access token: connect it")
    if user is None:
        return SendResult(SendOutcome.NOT_SENT, "the threads channel's user_id is not a Threads user id")
    if not text and not media:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'body' and no media to post")
    if len(media) > MAX_CAROUSEL:
        return SendResult(SendOutcome.PERMANENT, f"{len(media)} media items; Threads takes at most {MAX_CAROUSEL}")
    reply_to = delivery.payload.get("reply_to")
    parent = reply_to.get("parent") if isinstance(reply_to, dict) else None
    return meta_graph.publish_in_two_steps(context, STEPS, base=meta_graph.base_url(config, DEFAULT_URL), user=user,
                                           token=token, media=media, item_form=_item, text=text,
                                           lone_form={"media_type": "TEXT"},
                                           extra={"reply_to_id": str(parent)} if parent else None)


def post_url(config: dict, provider_id: str) -> str | None:
    """None: a Threads post's address carries its shortcode, which the publish answer does not give."""
    return None
