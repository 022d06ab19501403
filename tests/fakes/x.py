"""A loopback X API v2 (pytest-httpserver) that speaks what Tickwork uses and records every request.

The chunked media upload (``initialize``, ``append``, ``finalize``, ``STATUS``), media metadata
and ``POST /2/tweets``, as docs.x.com documents them: bearer tokens checked (401 otherwise), a
media id unknown or not yet processed refused with 400, duplicate text refused with 403, X's
problem bodies (``title``, ``detail``, ``type``, ``status``). A reply (``reply.in_reply_to_tweet_id``)
must answer a post this fake holds, else 400 as X refuses a reply to a post that is gone. A test queues an answer for a path
with :meth:`XFake.fail_next`, and states for a video's processing with ``processing``.
"""

import json
import re
from dataclasses import dataclass, field

from werkzeug import Request, Response

from models.channels.providers.text_length import x_weighted

CATEGORIES = {"tweet_image", "tweet_gif", "tweet_video", "amplify_video", "dm_image", "dm_gif", "dm_video",
              "subtitles"}


@dataclass
class Seen:
    """One request as the fake received it."""

    method: str
    path: str
    headers: dict
    query: dict
    json: dict | None = None
    form: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)  # name -> bytes


@dataclass
class Upload:
    media_id: str
    media_type: str
    total_bytes: int
    category: str
    chunks: dict = field(default_factory=dict)  # segment index -> bytes
    finalized: bool = False
    states: list = field(default_factory=list)  # processing states still to report, then "succeeded"
    alt: str | None = None

    @property
    def ready(self) -> bool:
        return self.finalized and not self.states


def problem(status: int, title: str, detail: str, **extra) -> Response:
    body = {"title": title, "detail": detail, "type": "about:blank", "status": status, **extra}
    return Response(json.dumps(body), status=status, content_type="application/problem+json")


class XFake:
    """X's API v2 on ``httpserver``; ``base`` is the channel's ``url``."""

    def __init__(self, httpserver, token: str = "x-token", processing: tuple[str, ...] = ("pending", "in_progress"),
                 check_after_secs: int = 2):
        self.server, self.token = httpserver, token
        self.processing, self.check_after_secs = list(processing), check_after_secs
        self.seen: list[Seen] = []
        self.uploads: dict[str, Upload] = {}
        self.posts: list[dict] = []
        self._queued: dict[str, list[Response]] = {}
        self._next_id = 1880028106020515840
        pattern = re.compile(r"^/2/.*")
        for method in ("GET", "POST"):
            httpserver.expect_request(pattern, method=method).respond_with_handler(self._handle)

    @property
    def base(self) -> str:
        return self.server.url_for("").rstrip("/")

    def fail_next(self, path: str, status: int, body: dict | None = None, headers: dict | None = None) -> None:
        """The next request to ``path`` (``/2/tweets``; an upload step: ``initialize``, ``append``...) gets this."""
        self._queued.setdefault(path, []).append(Response(json.dumps(body or {}), status=status, headers=headers or {},
                                                          content_type="application/json"))

    def requests(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        return [seen for seen in self.seen if (method is None or seen.method == method)
                and (path is None or seen.path == path)]

    def _new_id(self) -> str:
        self._next_id += 1
        return str(self._next_id)

    def _handle(self, request: Request) -> Response:
        seen = Seen(request.method, request.path, dict(request.headers), request.args.to_dict())
        if request.mimetype == "application/json":
            seen.json = request.get_json(silent=True)
        elif request.mimetype == "multipart/form-data":
            seen.form = request.form.to_dict()
            seen.files = {name: part.read() for name, part in request.files.items()}
        self.seen.append(seen)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return problem(401, "Unauthorized", "Unauthorized")
        step = request.path.rsplit("/", 1)[-1]
        for key in (request.path, step):
            if self._queued.get(key):
                return self._queued[key].pop(0)
        parts = request.path.strip("/").split("/")
        if request.method == "POST" and request.path == "/2/media/upload/initialize":
            return self._initialize(seen)
        if request.method == "POST" and len(parts) == 5 and parts[:3] == ["2", "media", "upload"]:
            upload = self.uploads.get(parts[3])
            if upload is None:
                return problem(400, "Invalid Request", f"media id {parts[3]} is not an upload in progress")
            return self._append(upload, seen) if parts[4] == "append" else self._finalize(upload)
        if request.method == "GET" and request.path == "/2/media/upload":
            return self._status(seen)
        if request.method == "POST" and request.path == "/2/media/metadata":
            return self._metadata(seen)
        if request.method == "POST" and request.path == "/2/tweets":
            return self._tweet(seen)
        return problem(404, "Not Found Error", f"no route {request.method} {request.path}")

    def _initialize(self, seen: Seen) -> Response:
        body = seen.json or {}
        if not isinstance(body.get("total_bytes"), int) or not body.get("media_type") \
                or body.get("media_category") not in CATEGORIES:
            return problem(400, "Invalid Request", "One or more parameters to your request was invalid.",
                           errors=[{"message": "media_type, total_bytes and a known media_category are required"}])
        upload = Upload(self._new_id(), body["media_type"], body["total_bytes"], body["media_category"])
        if upload.category in ("tweet_video", "tweet_gif"):
            upload.states = list(self.processing)
        self.uploads[upload.media_id] = upload
        return Response(json.dumps({"data": {"id": upload.media_id, "media_key": f"7_{upload.media_id}",
                                             "expires_after_secs": 86400}}), status=200,
                        content_type="application/json")

    def _append(self, upload: Upload, seen: Seen) -> Response:
        index = seen.form.get("segment_index", "")
        if "media" not in seen.files or not index.isdecimal() or int(index) > 999:
            return problem(400, "Invalid Request", "media (a file) and segment_index (0 to 999) are required")
        upload.chunks[int(index)] = seen.files["media"]
        return Response(json.dumps({"data": {"expires_at": 1780000000}}), status=200, content_type="application/json")

    def _finalize(self, upload: Upload) -> Response:
        data = b"".join(upload.chunks[index] for index in sorted(upload.chunks))
        if sorted(upload.chunks) != list(range(len(upload.chunks))) or len(data) != upload.total_bytes:
            return problem(400, "Invalid Request", f"the segments hold {len(data)} bytes of {upload.total_bytes}")
        upload.finalized = True
        return Response(json.dumps({"data": self._media(upload)}), status=200, content_type="application/json")

    def _status(self, seen: Seen) -> Response:
        upload = self.uploads.get(seen.query.get("media_id", ""))
        if seen.query.get("command") != "STATUS" or upload is None:
            return problem(400, "Invalid Request", "command=STATUS and a known media_id are required")
        if upload.states:
            upload.states.pop(0)
        return Response(json.dumps({"data": self._media(upload)}), status=200, content_type="application/json")

    def _media(self, upload: Upload) -> dict:
        data = {"id": upload.media_id, "media_key": f"7_{upload.media_id}", "size": upload.total_bytes,
                "expires_after_secs": 86400}
        if upload.category in ("tweet_video", "tweet_gif"):
            state = upload.states[0] if upload.states else "succeeded"
            data["processing_info"] = {"state": state, **({"check_after_secs": self.check_after_secs}
                                                          if state != "succeeded" else {"progress_percent": 100})}
        return data

    def _metadata(self, seen: Seen) -> Response:
        body = seen.json or {}
        upload = self.uploads.get(str(body.get("id")))
        text = ((body.get("metadata") or {}).get("alt_text") or {}).get("text")
        if upload is None or not upload.finalized or not isinstance(text, str):
            return problem(400, "Invalid Request", "id (an uploaded media) and metadata.alt_text.text are required")
        if len(text) > 1000:
            return problem(400, "Invalid Request", "alt_text.text must be at most 1000 characters")
        upload.alt = text
        return Response(json.dumps({"data": {"id": upload.media_id, "associated_metadata": body["metadata"]}}),
                        status=200, content_type="application/json")

    def _tweet(self, seen: Seen) -> Response:
        body = seen.json
        if not isinstance(body, dict):
            return problem(400, "Invalid Request", "One or more parameters to your request was invalid.")
        text = body.get("text", "")
        media_ids = (body.get("media") or {}).get("media_ids", [])
        if not text and not media_ids:
            return problem(400, "Invalid Request", "One or more parameters to your request was invalid.",
                           errors=[{"message": "You must provide text or media."}])
        for media_id in media_ids:
            upload = self.uploads.get(media_id)
            if upload is None or not upload.ready:
                return problem(400, "Invalid Request", "One or more parameters to your request was invalid.",
                               errors=[{"message": f"Your media IDs are invalid: {media_id}"}])
        if x_weighted(text) > 280:
            return problem(400, "Invalid Request", "One or more parameters to your request was invalid.",
                           errors=[{"message": "Your Tweet text is too long."}])
        if text and any(post["text"] == text for post in self.posts):
            return problem(403, "Forbidden", "You are not allowed to create a Tweet with duplicate content.")
        reply = body.get("reply")
        if reply is not None:
            parent = reply.get("in_reply_to_tweet_id") if isinstance(reply, dict) else None
            if not isinstance(parent, str) or parent not in {post["id"] for post in self.posts}:
                return problem(400, "Invalid Request", "One or more parameters to your request was invalid.",
                               errors=[{"message": "Your Tweet's reply.in_reply_to_tweet_id names a Tweet that has "
                                                   "been deleted or is not visible to you."}])
        post = {"id": self._new_id(), "text": text, "media_ids": list(media_ids),
                "in_reply_to": reply.get("in_reply_to_tweet_id") if reply else None}
        self.posts.append(post)
        return Response(json.dumps({"data": {"id": post["id"], "text": text, "edit_history_tweet_ids": [post["id"]]}}),
                        status=201, content_type="application/json")
