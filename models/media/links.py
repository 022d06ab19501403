"""Signed, expiring links to one media item, for networks that fetch media by URL (Threads, Instagram).

The link is ``{TICKWORK_BASE_URL}/media/link/<token>``. The token is the item's id (and the
prepared variant's key, when the network gets a prepared copy) with an expiry, signed with
itsdangerous under a key derived from the app's secret for this purpose only: it cannot be
forged or altered, it names exactly one file, and after :data:`LINK_LIFETIME` it answers 404
like any wrong token. The public route is on the public-routes list (``webapp/public.py``).
"""

from datetime import datetime, timedelta

from itsdangerous import BadSignature, URLSafeSerializer

from models.core.secrets_box import SecretBox

PATH = "/media/link/{token}"
# Long enough for a network to fetch a container's media after a slow queue, short enough that a
# link seen in a log soon stops working.
LINK_LIFETIME = timedelta(hours=6)
_PURPOSE = "media links"


def _serializer(box: SecretBox) -> URLSafeSerializer:
    return URLSafeSerializer(box.derive_key(_PURPOSE), salt="tickwork media link")


def media_link(base_url: str, box: SecretBox, media_id: int, prepared_key: str | None, now: datetime) -> str:
    """A link to media item ``media_id`` (its prepared copy ``prepared_key``, if given), good until now + the lifetime."""
    token = _serializer(box).dumps({"m": media_id, "p": prepared_key, "e": int((now + LINK_LIFETIME).timestamp())})
    return base_url.rstrip("/") + PATH.format(token=token)


def link_target(box: SecretBox, token: str, now: datetime) -> tuple[int, str | None] | None:
    """The item (and prepared copy) a token names while it is good; None for anything else."""
    if not isinstance(token, str) or len(token) > 400:
        return None
    try:
        found = _serializer(box).loads(token)
    except BadSignature:
        return None
    if not isinstance(found, dict) or not isinstance(found.get("m"), int) or not isinstance(found.get("e"), int):
        return None
    if found["e"] < now.timestamp():
        return None
    prepared = found.get("p")
    return found["m"], prepared if isinstance(prepared, str) else None
