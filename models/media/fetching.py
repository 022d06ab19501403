"""A media link fetched into the library, through the egress policy like every outbound call.

What is sent later is exactly what was checked now: the fetched bytes go through the same
content checks as an upload, and the post refers to the stored item, never to the link.
No redirect is followed (a redirect could lead past the policy's check of the first host);
a body larger than the largest kind allows is cut off and refused.
"""

from datetime import datetime

import httpx

from models.core.database import write_session
from models.core.egress import DestinationRefused, check_url, egress_client, shown_text
from models.core.errors import InvalidInput
from models.core.moves import Actor
from models.media.library import add_media
from models.media.settings import MediaSettings


def _refused(url: str, why: str, code: str = "fetch_failed") -> InvalidInput:
    return InvalidInput(f"could not fetch {shown_text(url, 120)!r} into the media library: {why}", field="media",
                        code=code)


def fetch_link(url: str, settings: MediaSettings) -> bytes:
    """The bytes at ``url`` (https, or http), at most ``settings.largest``; InvalidInput on ``media`` otherwise."""
    if not isinstance(url, str) or not url.lower().startswith(("https://", "http://")):
        raise InvalidInput(f"{shown_text(str(url), 80)!r} is neither a media id nor an http(s) link", field="media",
                           code="bad_link")
    check_url(url, field="media")
    limit = settings.largest
    try:
        with egress_client(follow_redirects=False, timeout=settings.fetch_timeout) as client, \
                client.stream("GET", url, headers={"User-Agent": "Tickwork", "Accept": "image/*, video/*"}) as response:
            if response.status_code != 200:
                raise _refused(url, f"the server answered {response.status_code}")
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise _refused(url, f"it is {int(declared):,} bytes; at most {limit:,}", "too_large")
            received = bytearray()
            for part in response.iter_bytes():
                received += part
                if len(received) > limit:
                    raise _refused(url, f"it is more than {limit:,} bytes", "too_large")
            return bytes(received)
    except DestinationRefused as refused:
        raise _refused(url, str(refused), "destination_not_allowed") from None
    except httpx.HTTPError as exc:
        raise _refused(url, shown_text(str(exc) or type(exc).__name__, 200)) from None


def fetch_links_into_library(workspace_id: int, items, *, settings: MediaSettings, actor: Actor, now: datetime,
                             max_items: int = 10):
    """``items`` (a post's ``media`` as given) with each http(s) link replaced by the id of the item fetched from it.

    Called by the shells before the save's own transaction, so no write lock is held while a
    link is fetched; each fetched file is added in a short transaction of its own. Anything
    that is not a link is left for the save's checks.
    """
    if not isinstance(items, list) or len(items) > max_items:
        return items  # the save's checks refuse it, before anything is fetched
    resolved = []
    for item in items:
        if isinstance(item, str) and item.lower().startswith(("https://", "http://")):
            data = fetch_link(item, settings)
            with write_session() as session:
                try:
                    added = add_media(session, workspace_id, data, settings=settings, actor=actor, now=now,
                                      name=item.rsplit("/", 1)[-1].split("?", 1)[0])
                except InvalidInput as refused:
                    raise InvalidInput(f"{shown_text(item, 120)!r}: {refused.message}", field="media",
                                       code=refused.code) from None
                resolved.append(added.id)
        else:
            resolved.append(item)
    return resolved
