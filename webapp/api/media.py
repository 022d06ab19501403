"""``/api/v1/media``: the workspace's media library. Upload (or fetch a link), list, show, describe, download, delete.

| endpoint | what |
|---|---|
| ``POST /media`` | multipart ``file`` and optional ``alt`` (or JSON ``{"url", "alt"}``, fetched through the egress policy) → 201 |
| ``GET /media`` | the library, newest first (``before`` an id, ``limit``) |
| ``GET /media/ID`` | one item, with what refers to it |
| ``GET /media/ID/file`` | its bytes as stored (metadata stripped) |
| ``PATCH /media/ID`` | its ``alt`` text |
| ``DELETE /media/ID`` | 204; 409 ``media_in_use`` naming the posts that are not archived and refer to it |
"""

from flask import Blueprint, Response, jsonify, request

from models.core.database import db, write_session
from models.core.errors import InvalidInput
from models.core.runtime import runtime
from models.media.fetching import fetch_link
from models.media.library import add_media, delete_media, describe_media, get_media, list_media, remove_unused_file
from models.media.settings import media_settings
from models.media.tables import MediaKind
from webapp.api.idempotency import idempotent
from webapp.api.parsing import json_body, query_limit
from webapp.api.serialize import iso
from webapp.api.spec import IDEMPOTENCY_KEY, errors, json_content, row_id
from webapp.auth import api_caller
from webapp.uploads import takes_media_upload

bp = Blueprint("api_media", __name__, url_prefix="/api/v1/media")


def media_json(item, *, used_by: list[str] | None = None) -> dict:
    body = {"id": item.id, "kind": item.kind, "mime": item.mime, "bytes": item.bytes, "width": item.width,
            "height": item.height, "duration": item.duration, "sha256": item.sha256, "alt": item.alt or "",
            "name": item.name or "", "created_at": iso(item.created_at)}
    if used_by is not None:
        body["used_by"] = used_by
    return body


def _upload() -> tuple[bytes, str | None, str | None]:
    """The file, its alt text and its name: multipart ``file`` and ``alt``, or a JSON ``url`` fetched now."""
    if request.mimetype == "application/json":
        body = json_body()
        unknown = sorted(set(body) - {"url", "alt"})
        if unknown:
            raise InvalidInput(f"unknown field {unknown[0]!r}; expected url, alt", field=unknown[0],
                               code="unknown_field")
        if not isinstance(body.get("url"), str):
            raise InvalidInput("url is required (or send the file as multipart field 'file')", field="url",
                               code="missing")
        try:
            data = fetch_link(body["url"], media_settings())
        except InvalidInput as refused:
            raise InvalidInput(refused.message, field="url", code=refused.code) from None
        return data, body.get("alt"), body["url"].rsplit("/", 1)[-1].split("?", 1)[0]
    upload = request.files.get("file")
    if upload is None:
        raise InvalidInput("send the file as the multipart field 'file' (or JSON with a url)", field="file",
                           code="missing")
    try:
        return upload.read(), request.form.get("alt"), upload.filename
    finally:
        upload.close()  # a large upload is spooled to a temporary file: closed as soon as it is read


@bp.post("")
@takes_media_upload
@idempotent
def create():
    """Add a file to the library; it is checked by its content and stored without EXIF or GPS data."""
    caller = api_caller()
    data, alt, name = _upload()
    rt = runtime()
    with write_session() as session:
        item = add_media(session, caller.workspace.id, data, settings=media_settings(), actor=caller.actor,
                         now=rt.now(), alt=alt, name=name)
        return jsonify(media_json(item, used_by=[])), 201


@bp.get("")
def index():
    """The library, newest first; ``before`` (an id) pages on."""
    caller = api_caller()
    before = request.args.get("before")
    if before is not None and (not before.isdecimal() or not before.isascii() or not 1 <= int(before) <= 2**31 - 1):
        raise InvalidInput("before must be a media id", field="before", code="bad_cursor")
    limit = query_limit()
    items = list_media(db.session, caller.workspace.id, before_id=int(before) if before else None, limit=limit + 1)
    page = items[:limit]
    return jsonify({"media": [media_json(item) for item in page],
                    "next_before": page[-1].id if len(items) > limit else None})


@bp.get("/<int:media_id>")
def show(media_id: int):
    """One item, with the posts (not archived) that refer to it."""
    caller = api_caller()
    item = get_media(db.session, caller.workspace.id, media_id)
    return jsonify(media_json(item, used_by=runtime().hooks.users_of_media(db.session, caller.workspace.id, item.id)))


@bp.get("/<int:media_id>/file")
def download(media_id: int):
    """The item's bytes as stored."""
    caller = api_caller()
    return file_answer(get_media(db.session, caller.workspace.id, media_id))


def file_answer(item):
    """An item's bytes as an answer: its own type, never sniffed, never run as a page; cached by its sha256."""
    response = Response(media_settings().store.read(item.sha256), mimetype=item.mime)
    response.set_etag(item.sha256)
    response.cache_control.private = True
    response.cache_control.max_age = 3600
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response.make_conditional(request)


@bp.patch("/<int:media_id>")
def update(media_id: int):
    """Change an item's alt text."""
    caller = api_caller()
    body = json_body()
    unknown = sorted(set(body) - {"alt"})
    if unknown or "alt" not in body:
        field = unknown[0] if unknown else "alt"
        raise InvalidInput("send {\"alt\": \"...\"}", field=field, code="unknown_field" if unknown else "missing")
    with write_session() as session:
        item = describe_media(session, caller.workspace.id, media_id, alt=body["alt"])
        return jsonify(media_json(item))


@bp.delete("/<int:media_id>")
def delete(media_id: int):
    """Remove an item; refused while a post that is not archived refers to it."""
    caller = api_caller()
    with write_session() as session:
        unused = delete_media(session, caller.workspace.id, media_id, hooks=runtime().hooks)
    remove_unused_file(db.session, media_settings(), unused)
    return "", 204


# -- the document -----------------------------------------------------------------------------

_MEDIA = {
    "type": "object",
    "required": ["id", "kind", "mime", "bytes", "width", "height", "sha256", "alt", "created_at"],
    "properties": {
        "id": {"type": "integer"},
        "kind": {"enum": [kind.value for kind in MediaKind]},
        "mime": {"type": "string"},
        "bytes": {"type": "integer"},
        "width": {"type": ["integer", "null"]},
        "height": {"type": ["integer", "null"]},
        "duration": {"type": ["number", "null"], "description": "seconds, for a video whose length could be read"},
        "sha256": {"type": "string"},
        "alt": {"type": "string"},
        "name": {"type": "string"},
        "created_at": {"type": "string", "format": "date-time"},
        "used_by": {"type": "array", "items": {"type": "string"}},
    },
}
_ANSWER = {"$ref": "#/components/schemas/Media"}

OPENAPI = {
    "schemas": {"Media": _MEDIA},
    "paths": {
        "/api/v1/media": {
            "post": {
                "summary": "Add a file to the media library (checked by its content, EXIF and GPS stripped)",
                "parameters": [IDEMPOTENCY_KEY],
                "requestBody": {"required": True, "content": {
                    "multipart/form-data": {"schema": {"type": "object", "required": ["file"], "properties": {
                        "file": {"type": "string", "format": "binary"}, "alt": {"type": "string", "maxLength": 5000}}}},
                    "application/json": {"schema": {"type": "object", "required": ["url"], "properties": {
                        "url": {"type": "string", "format": "uri"}, "alt": {"type": "string", "maxLength": 5000}},
                        "additionalProperties": False}}}},
                "responses": {"201": {"description": "The item.", **json_content(_ANSWER)},
                              **errors("400", "409", "413", "422")},
            },
            "get": {
                "summary": "The media library, newest first",
                "parameters": [
                    {"name": "before", "in": "query", "schema": {"type": "integer", "minimum": 1}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                ],
                "responses": {"200": {"description": "A page.", **json_content({
                    "type": "object", "required": ["media", "next_before"], "properties": {
                        "media": {"type": "array", "items": _ANSWER},
                        "next_before": {"type": ["integer", "null"]}}})},
                    **errors("422")},
            },
        },
        "/api/v1/media/{media_id}": {
            "parameters": [row_id("media_id")],
            "get": {"summary": "One media item, with what refers to it",
                    "responses": {"200": {"description": "The item.", **json_content(_ANSWER)}, **errors("404")}},
            "patch": {"summary": "Change a media item's alt text",
                      "requestBody": {"required": True, **json_content({
                          "type": "object", "required": ["alt"],
                          "properties": {"alt": {"type": "string", "maxLength": 5000}},
                          "additionalProperties": False})},
                      "responses": {"200": {"description": "The item.", **json_content(_ANSWER)},
                                    **errors("400", "404", "413", "422")}},
            "delete": {"summary": "Remove a media item (409 while a post that is not archived refers to it)",
                       "responses": {"204": {"description": "Removed."}, **errors("404", "409")}},
        },
        "/api/v1/media/{media_id}/file": {
            "parameters": [row_id("media_id")],
            "get": {"summary": "A media item's bytes, as stored",
                    "responses": {"200": {"description": "The file.", "content": {
                        "image/*": {"schema": {"type": "string", "format": "binary"}},
                        "video/*": {"schema": {"type": "string", "format": "binary"}}}},
                        **errors("404")}},
        },
    },
}
