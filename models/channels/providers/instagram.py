"""``instagram``: a post to a professional account (Instagram API with Instagram Login): a media container, its
``status_code`` polled until ``FINISHED``, then ``media_publish``.

Channel config: ``url`` (the Graph API base, default ``https://graph.instagram.com/v21.0``),
``ig_user_id`` (the professional account's id, default ``me``), and ``network_rate``, which
Tickwork writes when the channel is saved. Secret: an Instagram user access token with
``instagram_business_basic`` and ``instagram_business_content_publish``. Payload: ``body`` (the
caption) and ``media``, which Instagram fetches itself from a signed link to each item under
TICKWORK_BASE_URL. Instagram takes no post without an image or a video: such a post is refused
when it is saved (rule ``media.required``).

One image is a container with ``image_url``, ``caption`` and ``alt_text``; one video is a
``REELS`` container with ``video_url``; two to ten items are item containers
(``is_carousel_item``) and a ``CAROUSEL`` container naming them as ``children``. The
container's ``status_code`` is read until ``FINISHED`` (waiting with ``context.sleep``, within
the send's timeout), then ``POST /{ig-user-id}/media_publish`` with its ``creation_id`` answers
the post's id. Errors: :mod:`.meta_graph`.

A post's first comment (a payload with ``comment_on``, the post's media id; models/posts/threads.py)
is ``POST /{ig-media-id}/comments`` with ``message`` (the token needs
``instagram_business_manage_comments``); the comment's id becomes the provider id.

When the channel is saved, ``GET /{ig-user-id}/content_publishing_limit`` gives the account's
publishing limit (``quota_total`` posts per ``quota_duration`` seconds), kept as the channel's
``network_rate``; if it cannot be read, the documented 100 posts per 24 hours stands.
"""

from models.channels.limits import NETWORK_RATE_KEY, network_rate_text
from models.channels.providers import meta_graph
from models.channels.providers.accepts import JPEG, MP4, QUICKTIME, URL, Accepts, ImageRule, MediaRules, TextRule, \
    VideoRule
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text
from models.channels.providers.oauth import INSTAGRAM_REFRESH, OAuthSpec
from models.core.egress import check_url

kind = "instagram"
honours_idempotency_key = False
NETWORK = "Instagram"
DEFAULT_URL = "https://graph.instagram.com/v21.0"
MAX_CAROUSEL = 10
STEPS = meta_graph.TwoSteps(NETWORK, "media", "media_publish", text_field="caption", status_field="status_code",
                             error_field="status")
# Instagram's media specifications: images are JPEG only (others are converted for it), up to
# 8 MB, with an aspect ratio from 4:5 to 1.91:1 (Instagram scales the width to 320-1440 px
# itself); reels are MP4 or MOV, 3 seconds to 15 minutes, up to 300 MB. Carousels mix images
# and videos. Alt text is sent as ``alt_text`` on images (Instagram takes none on reels).
accepts = Accepts(
    text=(TextRule(2200),),
    media=MediaRules(max_items=MAX_CAROUSEL, delivery=URL, video_alone=False, required=True,
                     image=ImageRule(formats=frozenset({JPEG}), max_bytes=8 * 1000 * 1000, aspect=(0.8, 1.91),
                                     may_prepare=True),
                     video=VideoRule(formats=frozenset({MP4, QUICKTIME}), max_bytes=300 * 1000 * 1000,
                                     max_seconds=900, min_seconds=3)),
)
# A comment under a post (its first comment): text up to 2,200 characters, no media.
comments = Accepts(text=(TextRule(2200),), media=None)
oauth = OAuthSpec(
    authorize_url="https://www.instagram.com/oauth/authorize",
    token_url="https://api.instagram.com/oauth/access_token",
    scopes=("instagram_business_basic", "instagram_business_content_publish", "instagram_business_manage_comments"),
    refresh=INSTAGRAM_REFRESH,  # a long-lived token (60 days) renewed with GET /refresh_access_token
    profile_path="/me?fields=user_id,username,profile_picture_url",
    api_url="https://graph.instagram.com",  # the exchange, the refresh and the profile (the code goes to api.instagram.com)
    token_endpoint_auth_method="client_secret_post",
    scope_separator=",",
)


def finish_connect(answer: dict, *, http, client_id: str, client_secret: str, config: dict, token_url: str,
                   api_url: str) -> dict:
    """The code's one-hour token traded for a 60-day one (``ig_exchange_token``), which the clock job renews."""
    return meta_graph.long_lived_token(answer, http=http, url=f"{api_url}/access_token", network=NETWORK,
                                       params={"grant_type": "ig_exchange_token", "client_secret": client_secret})


def validate_config(config: dict) -> None:
    """The Graph API base must pass the egress policy; ``ig_user_id`` is a numeric id or ``me``."""
    if "url" in config:
        check_url(config["url"], field="url")
    meta_graph.check_node_id(config, "ig_user_id")


def read_at_save(config: dict, secret: str | None, context: SendContext) -> dict:
    """The account's publishing limit as ``network_rate``, or nothing when it cannot be read (the save goes on)."""
    if not secret:
        return {}
    user = meta_graph.node_id(config, "ig_user_id", "me")
    if user is None:
        return {}
    base = meta_graph.base_url(config, DEFAULT_URL)
    body = meta_graph.call(context, meta_graph.Budget(context.timeout), "GET",
                           f"{base}/{user}/content_publishing_limit", secret, params={"fields": "config,quota_usage"},
                           network=NETWORK, what="the publishing limit", publishing=False)
    if isinstance(body, SendResult):
        return {}
    data = body.get("data")
    limit = data[0].get("config") if isinstance(data, list) and data and isinstance(data[0], dict) else None
    total = limit.get("quota_total") if isinstance(limit, dict) else None
    duration = limit.get("quota_duration") if isinstance(limit, dict) else None
    if not all(isinstance(value, int) and not isinstance(value, bool) and value > 0 for value in (total, duration)):
        return {}
    return {NETWORK_RATE_KEY: network_rate_text(total, duration)}


def _item(item, *, carousel: bool) -> dict | SendResult:
    if not item.url:
        return SendResult(SendOutcome.PERMANENT, f"media item {item.media_id} has no link for Instagram to fetch; "
                                                 "nothing was sent")
    if item.kind == "video":
        form = {"media_type": "VIDEO" if carousel else "REELS", "video_url": item.url}
    else:
        form = {"image_url": item.url}
        if item.alt:
            form["alt_text"] = item.alt
    if carousel:
        form["is_carousel_item"] = "true"
    return form


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Create the post's container (and its items'), wait until Instagram has it ready, publish it."""
    config, token = delivery.config, delivery.secret
    user = meta_graph.node_id(config, "ig_user_id", "me")
    caption = payload_text(delivery.payload, "body", "text", "caption")
    media = list(delivery.media)
    if not token:
        return SendResult(SendOutcome.NOT_SENT, "the instagram channel has no access token: connect it")
    if "comment_on" in delivery.payload:
        return meta_graph.comment(context, meta_graph.Budget(context.timeout), meta_graph.base_url(config, DEFAULT_URL),
                                  token, delivery.payload.get("comment_on"), caption or "", network=NETWORK,
                                  media=media)
    if user is None:
        return SendResult(SendOutcome.NOT_SENT, "the instagram channel's ig_user_id is not an Instagram account id")
    if not media:
        return SendResult(SendOutcome.PERMANENT, "Instagram takes no post without an image or a video; nothing was sent")
    if len(media) > MAX_CAROUSEL:
        return SendResult(SendOutcome.PERMANENT, f"{len(media)} media items; Instagram takes at most {MAX_CAROUSEL}")
    return meta_graph.publish_in_two_steps(context, STEPS, base=meta_graph.base_url(config, DEFAULT_URL), user=user,
                                           token=token, media=media, item_form=_item, text=caption)


def post_url(config: dict, provider_id: str) -> str | None:
    """None: an Instagram post's address carries its shortcode, which the publish answer does not give."""
    return None
