"""The media library page: drop or pick files to upload, see each item's thumbnail, alt text and where it is used.

Every rule lives in :mod:`models.media`; these views parse the form, call it, and render.
"""

import io

from flask import Blueprint, Response, flash, redirect, request, url_for
from PIL import Image

from models.accounts.permissions import Permission
from models.core.database import db, write_session
from models.core.errors import DomainError, InvalidInput, NotFound
from models.core.runtime import runtime
from models.media.library import add_media, delete_media, describe_media, get_media, list_media, remove_unused_file
from models.media.links import link_target
from models.media.settings import media_settings
from models.media.tables import Media
from webapp.api.media import file_answer
from webapp.uploads import takes_media_upload
from webapp.views.context import render_page, require, viewer

bp = Blueprint("media", __name__)


def _render(error: DomainError | None = None, status: int = 200):
    v = viewer()
    items = list_media(db.session, v.workspace.id, limit=200)
    hooks = runtime().hooks
    used = {item.id: hooks.users_of_media(db.session, v.workspace.id, item.id) for item in items}
    settings = media_settings()
    return render_page("media/media.html", v=v, items=items, used=used, error=error,
                       limits={"image": settings.image_max_bytes, "gif": settings.gif_max_bytes,
                               "video": settings.video_max_bytes}), status


@bp.get("/media")
@require(Permission.READ)
def index():
    """The workspace's media library, newest first."""
    return _render()


@bp.post("/media")
@require(Permission.COMPOSE)
@takes_media_upload
def upload():
    """Add the dropped or picked files; each is checked by its content, and stored without EXIF or GPS data."""
    v = viewer()
    rt = runtime()
    files = [upload for upload in request.files.getlist("file") if upload.filename or upload.content_length]
    try:
        if not files:
            raise InvalidInput("Choose or drop a file to upload.", field="file", code="missing")
        added = []
        for upload in files:
            try:
                data = upload.read()
            finally:
                upload.close()  # a large upload is spooled to a temporary file: closed as soon as it is read
            with write_session() as session:
                try:
                    item = add_media(session, v.workspace.id, data, settings=media_settings(),
                                     actor=v.actor, now=rt.now(), alt=request.form.get("alt"), name=upload.filename)
                except DomainError as error:
                    error.message = f"{upload.filename or 'The file'}: {error.message}"
                    raise
                added.append(item.id)
    except DomainError as error:
        return _render(error, error.status)
    flash(f"Added {len(added)} item{'s' if len(added) != 1 else ''} to the library: "
          f"{', '.join(f'#{media_id}' for media_id in added)}.", "ok")
    return redirect(url_for("media.index"), code=303)


@bp.get("/media/<int:media_id>/file")
@require(Permission.READ)
def file(media_id: int):
    """An item's bytes (its thumbnail on this page)."""
    return file_answer(get_media(db.session, viewer().workspace.id, media_id))


@bp.get("/media/link/<token>")
def public_file(token: str):
    """One item's file (or its copy prepared for a network) by a signed, expiring link: for networks that fetch media."""
    rt = runtime()
    found = link_target(rt.secret_box, token, rt.now())
    item = db.session.get(Media, found[0]) if found else None
    if item is None:
        raise NotFound("This media link is not valid, or has expired.")
    store = media_settings().store
    data = store.read_prepared(found[1]) if found[1] else store.read(item.sha256)
    if data is None:
        raise NotFound("This media link is not valid, or has expired.")
    mime = item.mime
    if found[1]:
        with Image.open(io.BytesIO(data)) as prepared:
            mime = Image.MIME.get(prepared.format, item.mime)
    response = Response(data, mimetype=mime)
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response.cache_control.max_age = 300
    return response


@bp.post("/media/<int:media_id>/alt")
@require(Permission.COMPOSE)
def describe(media_id: int):
    """Change an item's alt text."""
    v = viewer()
    try:
        with write_session() as session:
            describe_media(session, v.workspace.id, media_id, alt=request.form.get("alt", ""))
    except InvalidInput as error:
        return _render(error, error.status)
    flash(f"Alt text of #{media_id} saved.", "ok")
    return redirect(url_for("media.index"), code=303)


@bp.post("/media/<int:media_id>/delete")
@require(Permission.COMPOSE)
def delete(media_id: int):
    """Remove an item; refused while a post that is not archived uses it."""
    v = viewer()
    try:
        with write_session() as session:
            unused = delete_media(session, v.workspace.id, media_id, hooks=runtime().hooks)
    except DomainError as error:
        if error.status == 404:
            raise
        return _render(error, error.status)
    remove_unused_file(db.session, media_settings(), unused)
    flash(f"Removed #{media_id} from the library.", "ok")
    return redirect(url_for("media.index"), code=303)
