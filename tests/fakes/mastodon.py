"""A Mastodon instance on a pytest-httpserver: statuses, media and the instance's limits, as documented.

``POST /api/v2/media`` (multipart ``file``, optional ``description``) answers 200 with the
attachment, or 202 with ``url: null`` while it is processed (``processing_polls`` asks of
``GET /api/v1/media/:id`` answer 206 before one answers 200). ``POST /api/v1/statuses`` takes
``status``, ``media_ids[]``, ``visibility`` and ``Idempotency-Key``: a media id it does not
know is 422, one still processing 422 "Cannot attach files that have not finished processing",
as Mastodon answers; ``in_reply_to_id`` must name a status it holds (else 404 "Record not found").
``GET /api/v2/instance`` tells its ``configuration.statuses`` limits.
A wrong token is 401 "The access token is invalid".
"""

import itertools
import re

from werkzeug import Response

from tests.fakes.recording import Received, json_response


class FakeMastodon:
    def __init__(self, server, token: str = "masto-token", max_characters: int = 500, max_media: int = 4,
                 processing_polls: int = 0):
        self.server, self.token = server, token
        self.max_characters, self.max_media, self.processing_polls = max_characters, max_media, processing_polls
        self.received: list[Received] = []
        self.media: dict[str, dict] = {}  # id → description, filename, bytes, polls left
        self.statuses: list[dict] = []
        self._queued: dict[str, list] = {}
        self._ids = itertools.count(109000000000000001)
        server.expect_request("/api/v2/media", method="POST").respond_with_handler(self._upload)
        server.expect_request(re.compile(r"^/api/v1/media/\d+$"), method="GET").respond_with_handler(self._media)
        server.expect_request("/api/v1/statuses", method="POST").respond_with_handler(self._status)
        server.expect_request("/api/v2/instance", method="GET").respond_with_handler(self._instance)

    @property
    def url(self) -> str:
        return self.server.url_for("").rstrip("/")

    def answer_next(self, path: str, body, status: int, headers: dict | None = None) -> None:
        self._queued.setdefault(path, []).append((status, body, headers or {}))

    def requests_to(self, path: str, method: str | None = None) -> list[Received]:
        return [r for r in self.received if r.path == path and (method is None or r.method == method)]

    def _begin(self, request) -> tuple[Received, Response | None]:
        received = Received.of(request)
        self.received.append(received)
        key = request.path if not request.path.startswith("/api/v1/media/") else "/api/v1/media/:id"
        if self._queued.get(key):
            status, body, headers = self._queued[key].pop(0)
            return received, json_response(body, status, headers)
        if request.path != "/api/v2/instance" and request.headers.get("Authorization") != f"Bearer {self.token}":
            return received, json_response({"error": "The access token is invalid"}, 401)
        return received, None

    def _attachment(self, media_id: str) -> dict:
        item = self.media[media_id]
        ready = item["polls_left"] == 0
        return {"id": media_id, "type": "image", "url": f"{self.url}/media/{media_id}.jpg" if ready else None,
                "preview_url": f"{self.url}/media/{media_id}_small.jpg", "description": item["description"],
                "blurhash": "UFBWY:8_0Jxv4mx]t8t64.%M-:IUWGWAt6M}"}

    def _upload(self, request) -> Response:
        received, answered = self._begin(request)
        if answered is not None:
            return answered
        if "file" not in received.files:
            return json_response({"error": "Validation failed: File can't be blank"}, 422)
        media_id = str(next(self._ids))
        filename, mime, data = received.files["file"]
        self.media[media_id] = {"description": received.form.get("description"), "filename": filename, "mime": mime,
                                "bytes": data, "polls_left": self.processing_polls}
        return json_response(self._attachment(media_id), 202 if self.processing_polls else 200)

    def _media(self, request) -> Response:
        received, answered = self._begin(request)
        if answered is not None:
            return answered
        media_id = request.path.rsplit("/", 1)[1]
        if media_id not in self.media:
            return json_response({"error": "Record not found"}, 404)
        item = self.media[media_id]
        if item["polls_left"] > 0:
            item["polls_left"] -= 1
            if item["polls_left"] > 0:
                return json_response(self._attachment(media_id), 206)
        return json_response(self._attachment(media_id), 200)

    def _status(self, request) -> Response:
        received, answered = self._begin(request)
        if answered is not None:
            return answered
        ids = received.form.get("media_ids[]", [])
        ids = [ids] if isinstance(ids, str) else ids
        text = received.form.get("status", "")
        if not text and not ids:
            return json_response({"error": "Validation failed: Text can't be blank"}, 422)
        if len(ids) > self.max_media:
            return json_response({"error": f"Validation failed: Media attachments exceed the limit of {self.max_media}"}, 422)
        for media_id in ids:
            if media_id not in self.media:
                return json_response({"error": "Validation failed: Media attachments are invalid"}, 422)
            if self.media[media_id]["polls_left"] > 0:
                return json_response({"error": "Cannot attach files that have not finished processing. "
                                               "Try again in a moment!"}, 422)
        parent = received.form.get("in_reply_to_id")
        if parent is not None and parent not in {status["id"] for status in self.statuses}:
            return json_response({"error": "Record not found"}, 404)
        status = {"id": str(next(self._ids)), "content": f"<p>{text}</p>", "visibility": received.form.get("visibility"),
                  "media_attachments": [self._attachment(media_id) for media_id in ids], "in_reply_to_id": parent}
        self.statuses.append(status)
        return json_response(status)

    def _instance(self, request) -> Response:
        _, answered = self._begin(request)
        if answered is not None:
            return answered
        return json_response({"domain": "masto.test", "title": "Masto test", "version": "4.3.0", "configuration": {
            "urls": {"streaming": "wss://masto.test"},
            "statuses": {"max_characters": self.max_characters, "max_media_attachments": self.max_media,
                         "characters_reserved_per_url": 23},
            "media_attachments": {"supported_mime_types": ["image/jpeg", "image/png", "image/webp", "video/mp4"],
                                  "image_size_limit": 16777216, "video_size_limit": 103809024}}})
