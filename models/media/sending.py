"""The media of a send: the payload's media ids turned into the files its provider's declaration asks for.

The dispatch calls :func:`with_media` just before a provider's ``send``, outside any write
transaction. A provider that declares ``delivery = "upload"`` gets each item in
``Delivery.media``, prepared for its rules (:mod:`models.media.preparing`); one that takes
media by id (``log``, ``webhook``) or none gets the delivery as it was. An item gone from the
library, or one that cannot be prepared, fails the send as permanent: another attempt would
meet the same file.
"""

from dataclasses import replace

from sqlalchemy.engine import Engine

from models.channels.providers import Delivery, SendOutcome, SendResult, accepts_for
from models.channels.providers.accepts import UPLOAD
from models.core.database import read_session
from models.core.errors import InvalidInput
from models.media.library import media_in_order
from models.media.preparing import CannotPrepare, prepared_media
from models.media.settings import media_settings


def media_ids_of(payload: dict) -> list[int]:
    """The media ids a payload names (a list of whole numbers under ``media``); none for anything else."""
    media = payload.get("media") if isinstance(payload, dict) else None
    if not isinstance(media, list) or not all(isinstance(item, int) and not isinstance(item, bool) for item in media):
        return []  # no media, or a row queued before media were ids (links): nothing to attach
    return media


def with_media(delivery: Delivery, kind: str, engine: Engine | None = None) -> Delivery | SendResult:
    """``delivery`` with its media attached as ``kind``'s provider wants them, or the permanent failure why not."""
    rules = accepts_for(kind).media
    ids = media_ids_of(delivery.payload)
    if not ids or rules is None or rules.delivery != UPLOAD:
        return delivery
    settings = media_settings()
    with read_session(engine) as session:
        try:
            items = media_in_order(session, delivery.workspace_id, ids)
        except InvalidInput as gone:
            return SendResult(SendOutcome.PERMANENT, f"{gone.message}; nothing was sent")
        session.expunge_all()
    files = []
    for number, item in enumerate(items, 1):
        try:
            files.append(prepared_media(item, rules, settings.store))
        except FileNotFoundError:
            return SendResult(SendOutcome.PERMANENT, f"media item {item.id}'s file is missing from the media folder "
                                                     f"({settings.root}); nothing was sent")
        except CannotPrepare as exc:
            return SendResult(SendOutcome.PERMANENT, f"media item {number} (id {item.id}) cannot be prepared for "
                                                     f"{kind}: {exc}; nothing was sent")
    return replace(delivery, media=tuple(files))
