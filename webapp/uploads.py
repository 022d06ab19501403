"""Routes that take a file: up to 20 MiB there, while every other route keeps the 2 MiB of MAX_CONTENT_LENGTH.

A view marked :func:`takes_upload` gets the larger limit. It is raised in a hook that runs
before any other (CSRF protection reads a form body before the view is reached), and only
for the marked endpoints: the limit is per request, never the app's.
"""

from functools import wraps

from flask import Flask, current_app, request

from models.core.errors import InvalidInput

UPLOAD_LIMIT = 20 * 1024 * 1024


def takes_upload(view):
    """Mark ``view`` as one that reads a file of up to :data:`UPLOAD_LIMIT` bytes."""

    @wraps(view)
    def wrapper(*args, **kwargs):
        return view(*args, **kwargs)

    wrapper.upload_limit = UPLOAD_LIMIT
    return wrapper


def takes_media_upload(view):
    """Mark ``view`` as one that reads a media file: up to the largest kind the media settings allow."""
    from models.media.settings import media_settings

    view = takes_upload(view)
    view.upload_limit = lambda: media_settings().largest + 1024 * 1024  # the multipart envelope and the alt text
    return view


def uploaded_file() -> bytes:
    """The file a :func:`takes_upload` API route was sent: a multipart ``file`` field, or the raw body."""
    if request.files:
        upload = request.files.get("file")
        if upload is None:
            raise InvalidInput("send the CSV file as the request body, or as the multipart field 'file'",
                               field="file", code="missing")
        return upload.read()
    return request.get_data(cache=False)


def _raise_limit_for_uploads():
    view = current_app.view_functions.get(request.endpoint or "")
    limit = getattr(view, "upload_limit", None)
    if callable(limit):
        limit = limit()
    if limit:
        request.max_content_length = limit


def init_app(app: Flask) -> None:
    """Install the hook first, ahead of CSRF protection's, which reads form bodies."""
    app.before_request_funcs.setdefault(None, []).insert(0, _raise_limit_for_uploads)
