"""``facebook``: a post on a Facebook Page through the Graph API: ``/{page-id}/feed`` for text (and a link),
``/{page-id}/photos`` for photos, uploaded by Tickwork.

Channel config: ``url`` (the Graph API base, default ``https://graph.facebook.com/v21.0``),
``page_id`` (the Page's id). Secret: a Page access token with ``pages_manage_posts`` (the
channel's Connect button gets one). Payload: ``body`` (or ``text``, ``message``), optional
``link`` (a text post's link preview) and ``media``.

A text post is ``POST /{page-id}/feed`` with ``message`` (and ``link``). One photo is
``POST /{page-id}/photos``, multipart: the file as ``source``, the text as ``message``, the
item's alt text as ``alt_text_custom``. Several photos are each uploaded unpublished
(``published=false``), then one ``/feed`` post names them, ``attached_media[n]={"media_fbid": id}``.
The Page post's id (``{page-id}_{post-id}``) becomes the provider id. Errors: :mod:`.meta_graph`.
An unpublished photo is seen by nobody, so a failure before the last call is "not sent".

A post's first comment (a payload with ``comment_on``, the Page post's id; models/posts/threads.py)
is ``POST /{post-id}/comments`` with ``message``; the comment's id becomes the provider id.
"""

import json

from models.channels.providers import meta_graph
from models.channels.providers.accepts import JPEG, PNG, UPLOAD, Accepts, ImageRule, MediaRules, TextRule
from models.channels.providers.base import Delivery, SendContext, SendOutcome, SendResult, payload_text
from models.channels.providers.oauth import NO_REFRESH, OAuthSpec
from models.core.egress import check_url

kind = "facebook"
honours_idempotency_key = False
NETWORK = "Facebook"
DEFAULT_URL = "https://graph.facebook.com/v21.0"
MAX_PHOTOS = 10
# Photos only: JPEG or PNG under 10 MB (the Photo reference's limit; others are converted or
# downscaled for it). Alt text goes as ``alt_text_custom``, for which Facebook states no length.
# Video is not posted (Facebook takes it through a separate resumable upload).
accepts = Accepts(
    text=(TextRule(63_206),),
    media=MediaRules(max_items=MAX_PHOTOS, delivery=UPLOAD, video_alone=False,
                     image=ImageRule(formats=frozenset({JPEG, PNG}), max_bytes=10_000_000 - 1, may_prepare=True),
                     gif=None, video=None),
)
# A comment under a post (its first comment): text up to 8,000 characters, no media.
comments = Accepts(text=(TextRule(8000),), media=None)
oauth = OAuthSpec(
    authorize_url="https://www.facebook.com/v21.0/dialog/oauth",
    token_url="https://graph.facebook.com/v21.0/oauth/access_token",
    scopes=("pages_manage_posts", "pages_read_engagement", "pages_show_list"),
    # A Page access token read with a long-lived user token has no expiry: nothing to refresh. It
    # stops working only when revoked or the person's password changes (code 190: reconnect needed).
    refresh=NO_REFRESH,
    profile_path="/me?fields=id,name,picture",  # with the Page's token, /me is the Page
    token_endpoint_auth_method="client_secret_post",
    scope_separator=",",
)


def finish_connect(answer: dict, *, http, client_id: str, client_secret: str, config: dict, token_url: str,
                   api_url: str) -> dict:
    """The person's short-lived token traded for a long-lived one (``fb_exchange_token``), and with it the token of
    the channel's Page (``page_id``), which is what the channel posts with and does not expire."""
    user = meta_graph.long_lived_token(answer, http=http, url=token_url, network=NETWORK, token_param="fb_exchange_token",
                                       params={"grant_type": "fb_exchange_token", "client_id": client_id,
                                               "client_secret": client_secret})
    base = meta_graph.base_url(config, DEFAULT_URL)
    return meta_graph.page_token(user["access_token"], meta_graph.node_id(config, "page_id"), http=http, base=base,
                                 network=NETWORK)


def validate_config(config: dict) -> None:
    """The Graph API base must pass the egress policy; ``page_id`` is the Page's numeric id (or ``me``)."""
    if "url" in config:
        check_url(config["url"], field="url")
    meta_graph.check_node_id(config, "page_id")


def _photo_form(item, *, message: str | None, published: bool) -> tuple[dict, dict]:
    form = {} if published else {"published": "false"}
    if message:
        form["message"] = message
    if item.alt:
        form["alt_text_custom"] = item.alt
    extension = {"image/png": "png"}.get(item.mime, "jpg")
    return form, {"source": (f"photo-{item.media_id}.{extension}", item.data, item.mime)}


def send(delivery: Delivery, context: SendContext) -> SendResult:
    """Post the text, one photo, or several photos (uploaded unpublished, then attached to one feed post)."""
    config, token, payload = delivery.config, delivery.secret, delivery.payload
    page = meta_graph.node_id(config, "page_id")
    message = payload_text(payload, "body", "text", "message")
    link = payload_text(payload, "link")
    photos = list(delivery.media)
    if not token:
        return SendResult(SendOutcome.NOT_SENT, "the facebook channel has no Page access token: connect it")
    if page is None:
        return SendResult(SendOutcome.NOT_SENT, "the facebook channel needs its page_id (the Page's numeric id)")
    if not message and not photos and not link:
        return SendResult(SendOutcome.NOT_SENT, "the payload has no 'body', link or photo to post")
    if any(item.kind != "image" for item in photos):
        return SendResult(SendOutcome.PERMANENT, "a Facebook channel posts photos only; nothing was sent")
    if len(photos) > MAX_PHOTOS:
        return SendResult(SendOutcome.PERMANENT, f"{len(photos)} photos; a Facebook post takes at most {MAX_PHOTOS}")
    base = meta_graph.base_url(config, DEFAULT_URL)
    budget = meta_graph.Budget(context.timeout)
    if "comment_on" in payload:
        return meta_graph.comment(context, budget, base, token, payload.get("comment_on"), message or "",
                                  network=NETWORK, media=photos)

    if len(photos) == 1:
        form, files = _photo_form(photos[0], message=message, published=True)
        body = meta_graph.call(context, budget, "POST", f"{base}/{page}/photos", token, data=form, files=files,
                               network=NETWORK, what="the photo post", publishing=True)
        if isinstance(body, SendResult):
            return body
        posted = body.get("post_id") or body.get("id")
        if not posted:
            return SendResult(SendOutcome.UNKNOWN, "Facebook answered the photo post without an id")
        return SendResult.success(str(posted))
    form: dict = {}
    if message:
        form["message"] = message
    for number, item in enumerate(photos):
        photo_form, files = _photo_form(item, message=None, published=False)
        body = meta_graph.call(context, budget, "POST", f"{base}/{page}/photos", token, data=photo_form, files=files,
                               network=NETWORK, what=f"photo {number + 1}'s upload", publishing=False)
        if isinstance(body, SendResult):
            return body
        uploaded = meta_graph.created_id(body, NETWORK, f"photo {number + 1}'s upload", publishing=False)
        if isinstance(uploaded, SendResult):
            return uploaded
        form[f"attached_media[{number}]"] = json.dumps({"media_fbid": uploaded})
    if link and not photos:
        form["link"] = link  # a link preview is for a text post: Facebook takes no link beside attached photos
    body = meta_graph.call(context, budget, "POST", f"{base}/{page}/feed", token, data=form, network=NETWORK,
                           what="the post", publishing=True)
    if isinstance(body, SendResult):
        return body
    posted = meta_graph.created_id(body, NETWORK, "the post", publishing=True)
    return posted if isinstance(posted, SendResult) else SendResult.success(posted)


def post_url(config: dict, provider_id: str) -> str | None:
    """The Page post on Facebook: ``https://www.facebook.com/<page-id>_<post-id>`` (a post's id is its address)."""
    page, _, post = provider_id.partition("_")
    if not (page.isascii() and page.isdecimal() and post.isascii() and post.isdecimal()):
        return None
    return f"https://www.facebook.com/{page}_{post}"
