"""What people do to the media library: add an item (uploaded or fetched), read, describe (alt text), delete.

Both shells call these inside a write transaction; each raises :mod:`models.core.errors`
types and changes nothing when it does. A file is checked by its content
(:func:`models.media.content.inspect`) and written to the content-addressed folder before its
row is inserted, so a row never names a file that is not there. Deleting an item is refused
(409, naming them) while anything not archived refers to it: every wing that refers to media
answers through the ``media users`` hook.
"""

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from models.channels.providers.accepts import MediaFacts
from models.core.errors import Conflict, InvalidInput, NotFound
from models.core.hooks import Hooks
from models.core.moves import Actor
from models.media.content import inspect, refuse
from models.media.settings import MediaSettings
from models.media.tables import MAX_ALT, MAX_NAME, Media

MAX_LISTED = 200


def check_alt(alt) -> str:
    """Alt text: a string of at most :data:`MAX_ALT` characters, without NUL."""
    if alt is None:
        return ""
    if not isinstance(alt, str):
        raise InvalidInput("alt must be text", field="alt", code="wrong_type")
    if len(alt) > MAX_ALT:
        raise InvalidInput(f"alt is {len(alt):,} characters; at most {MAX_ALT:,}", field="alt", code="too_long")
    if "\x00" in alt:
        raise InvalidInput("alt must not contain NUL characters", field="alt", code="bad_character")
    return alt.strip()


def _shown_name(name) -> str:
    if not isinstance(name, str):
        return ""
    name = "".join(char for char in name if char.isprintable()).strip()
    return name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1][:MAX_NAME]


def add_media(
    session: Session,
    workspace_id: int,
    data: bytes,
    *,
    settings: MediaSettings,
    actor: Actor,
    now: datetime,
    alt=None,
    name=None,
) -> Media:
    """Check ``data`` by its content, store it without metadata, and add it to the workspace's library."""
    alt = check_alt(alt)
    if len(data) > settings.largest:
        raise refuse(f"the file is {len(data):,} bytes; at most {settings.largest:,}", "too_large")
    found = inspect(data, max_pixels=settings.max_pixels)
    limit = settings.max_bytes(found.kind)
    if len(found.data) > limit:
        raise refuse(f"the {found.kind} is {len(found.data):,} bytes; a {found.kind} may have at most {limit:,}",
                     "too_large")
    sha256 = settings.store.put(found.data)
    item = Media(workspace_id=workspace_id, created_by_id=actor.user_id, kind=found.kind, mime=found.mime,
                 bytes=len(found.data), width=found.width, height=found.height, duration=found.duration,
                 sha256=sha256, alt=alt, name=_shown_name(name), created_at=now)
    session.add(item)
    session.flush()
    return item


def get_media(session: Session, workspace_id: int, media_id: int, *, lock: bool = False) -> Media:
    query = select(Media).where(Media.id == media_id, Media.workspace_id == workspace_id)
    if lock:
        query = query.with_for_update()
    item = session.scalar(query)
    if item is None:
        raise NotFound("There is no such media item in this workspace.")
    return item


def list_media(session: Session, workspace_id: int, *, before_id: int | None = None, limit: int = 50) -> list[Media]:
    """A page of the library, newest first."""
    query = select(Media).where(Media.workspace_id == workspace_id)
    if before_id is not None:
        query = query.where(Media.id < before_id)
    return list(session.scalars(query.order_by(Media.id.desc()).limit(min(limit, MAX_LISTED))))


def media_in_order(session: Session, workspace_id: int, media_ids: list[int], *, field: str = "media") -> list[Media]:
    """The items ``media_ids`` names, in that order; InvalidInput on ``field`` naming one not in the library."""
    if not media_ids:
        return []
    found = {item.id: item for item in session.scalars(
        select(Media).where(Media.workspace_id == workspace_id, Media.id.in_(sorted(set(media_ids)))))}
    for media_id in media_ids:
        if media_id not in found:
            raise InvalidInput(f"there is no media item {media_id} in this workspace's library", field=field,
                               code="unknown_media")
    return [found[media_id] for media_id in media_ids]


def describe_media(session: Session, workspace_id: int, media_id: int, *, alt) -> Media:
    """Change an item's alt text (sent with it from then on)."""
    alt = check_alt(alt)
    item = get_media(session, workspace_id, media_id, lock=True)
    item.alt = alt
    session.flush()
    return item


def delete_media(session: Session, workspace_id: int, media_id: int, *, hooks: Hooks) -> str | None:
    """Remove an item from the library; 409 naming what refers to it while anything not archived does.

    Answers the sha256 whose file no row names any more (the caller removes it once the
    transaction has committed, :func:`remove_unused_file`), or None when another item shares it.
    """
    item = get_media(session, workspace_id, media_id, lock=True)
    users = hooks.users_of_media(session, workspace_id, media_id)
    if users:
        shown = ", ".join(users[:10]) + (f" and {len(users) - 10} more" if len(users) > 10 else "")
        raise Conflict(f"media item {media_id} is used by {shown}; remove it from them first", code="media_in_use",
                       used_by=users)
    sha256 = item.sha256
    session.delete(item)
    session.flush()
    others = session.scalar(select(func.count()).select_from(Media).where(Media.sha256 == sha256))
    return None if others else sha256


def remove_unused_file(session: Session, settings: MediaSettings, sha256: str | None) -> None:
    """Remove the file of ``sha256`` if still no row names it (called after the delete committed)."""
    if sha256 and not session.scalar(select(func.count()).select_from(Media).where(Media.sha256 == sha256)):
        settings.store.remove(sha256)


def facts_of(item: Media) -> MediaFacts:
    """What the providers' rules are checked against, for one item."""
    return MediaFacts(media_id=item.id, kind=item.kind, mime=item.mime, bytes=item.bytes, width=item.width,
                      height=item.height, duration=item.duration, alt=item.alt or "")
