"""A loopback LinkedIn REST API (pytest-httpserver) that speaks the Posts and Images APIs and records every request.

``POST /rest/images?action=initializeUpload`` answers an ``uploadUrl`` on this same server and
an image URN; a ``PUT`` of the bytes there makes the image available; ``POST /rest/posts``
checks the documented headers (``LinkedIn-Version`` YYYYMM, ``X-Restli-Protocol-Version: 2.0.0``),
the bearer token (401 ``EXPIRED_ACCESS_TOKEN`` otherwise), the body's shape and that every
image named was uploaded, and answers 201 with the post's URN in ``x-restli-id``. Errors carry
LinkedIn's body: ``status``, ``serviceErrorCode``, ``code``, ``message``. A test queues an
answer for a path with :meth:`LinkedInFake.fail_next`.

The Comments API: ``POST /rest/socialActions/{post URN, encoded}/comments`` with ``actor``,
``object`` (the same URN, of a post this fake made) and ``message.text`` (at most 1,250
characters) answers 201 with the comment (``commentUrn``, ``id``) and its URN in ``x-restli-id``;
``comments`` keeps them.
"""

import json
import re
from dataclasses import dataclass
from urllib.parse import unquote

from werkzeug import Request, Response

VERSION = re.compile(r"^20[0-9]{2}(0[1-9]|1[0-2])$")
AUTHOR = re.compile(r"^urn:li:(person|organization):[A-Za-z0-9_-]+$")
POST_KEYS = {"author", "commentary", "visibility", "distribution", "lifecycleState", "isReshareDisabledByAuthor",
             "content"}


@dataclass
class Seen:
    """One request as the fake received it."""

    method: str
    path: str
    headers: dict
    query: dict
    body: bytes
    json: dict | None = None


def error(status: int, code: str, message: str, service_code: int = 100) -> Response:
    return Response(json.dumps({"status": status, "serviceErrorCode": service_code, "code": code,
                                "message": message}), status=status, content_type="application/json")


class LinkedInFake:
    """LinkedIn's REST API on ``httpserver``; ``base`` is the channel's ``url``."""

    def __init__(self, httpserver, token: str = "li-token"):
        self.server, self.token = httpserver, token
        self.seen: list[Seen] = []
        self.images: dict[str, dict] = {}  # urn -> {"owner", "data", "uploaded"}
        self.posts: list[dict] = []
        self.comments: list[dict] = []
        self._queued: dict[str, list[Response]] = {}
        self._next = 7000
        for method, path in (("POST", "/rest/images"), ("PUT", re.compile(r"^/dms-uploads/.*")),
                             ("POST", "/rest/posts"), ("POST", re.compile(r"^/rest/socialActions/[^/]+/comments$"))):
            httpserver.expect_request(path, method=method).respond_with_handler(self._handle)

    @property
    def base(self) -> str:
        return self.server.url_for("").rstrip("/")

    def fail_next(self, path: str, status: int, body: dict | None = None, headers: dict | None = None) -> None:
        """The next request to ``path`` (``/rest/posts``, ``/rest/images``, ``upload``) gets this answer."""
        self._queued.setdefault(path, []).append(Response(json.dumps(body or {}), status=status, headers=headers or {},
                                                          content_type="application/json"))

    def requests(self, method: str | None = None, path: str | None = None) -> list[Seen]:
        return [seen for seen in self.seen if (method is None or seen.method == method)
                and (path is None or seen.path == path or (path == "upload" and seen.path.startswith("/dms-uploads/")))]

    def _handle(self, request: Request) -> Response:
        body = request.get_data()
        seen = Seen(request.method, request.path, dict(request.headers), request.args.to_dict(), body)
        if request.mimetype == "application/json":
            seen.json = request.get_json(silent=True)
        self.seen.append(seen)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return error(401, "EXPIRED_ACCESS_TOKEN", "The token used in the request has expired", 65602)
        key = "upload" if request.path.startswith("/dms-uploads/") else request.path
        if self._queued.get(key):
            return self._queued[key].pop(0)
        if key == "upload":
            return self._put(request.path, body)
        if not VERSION.match(request.headers.get("LinkedIn-Version", "")):
            return error(400, "VERSION_MISSING", "A version must be present. Please specify a version by adding the "
                                                 "LinkedIn-Version header.")
        if request.headers.get("X-Restli-Protocol-Version") != "2.0.0":
            return error(400, "BAD_REQUEST", "X-Restli-Protocol-Version 2.0.0 is required")
        if request.path == "/rest/images":
            return self._initialize(seen)
        if request.path.startswith("/rest/socialActions/"):
            return self._comment(seen, unquote(request.path.split("/")[3]))
        return self._post(seen)

    def _comment(self, seen: Seen, target: str) -> Response:
        comment = seen.json
        if not isinstance(comment, dict) or not AUTHOR.match(str(comment.get("actor", ""))):
            return error(422, "UNPROCESSABLE_ENTITY", "/actor :: field is required")
        if comment.get("object") != target or target not in {post["urn"] for post in self.posts}:
            return error(404, "NOT_FOUND", f"Not enough permissions or the entity {target} does not exist")
        text = (comment.get("message") or {}).get("text")
        if not isinstance(text, str) or not text or len(text) > 1250:
            return error(422, "UNPROCESSABLE_ENTITY", "/message/text :: length must be 1 to 1250")
        self._next += 1
        urn = f"urn:li:comment:({target},{self._next})"
        made = {"actor": comment["actor"], "object": target, "message": {"text": text}, "id": str(self._next),
                "commentUrn": urn}
        self.comments.append(made)
        return Response(json.dumps(made), status=201, headers={"x-restli-id": urn}, content_type="application/json")

    def _initialize(self, seen: Seen) -> Response:
        owner = ((seen.json or {}).get("initializeUploadRequest") or {}).get("owner")
        if seen.query.get("action") != "initializeUpload" or not isinstance(owner, str) or not AUTHOR.match(owner):
            return error(422, "UNPROCESSABLE_ENTITY", "initializeUploadRequest.owner must be a person or "
                                                      "organization URN")
        self._next += 1
        urn = f"urn:li:image:C4E10AQ{self._next}"
        self.images[urn] = {"owner": owner, "data": None}
        return Response(json.dumps({"value": {
            "uploadUrlExpiresAt": 1780000000000,
            "uploadUrl": self.server.url_for(f"/dms-uploads/sp/{self._next}/uploaded-image/0"),
            "image": urn}}), status=200, content_type="application/json")

    def _put(self, path: str, body: bytes) -> Response:
        number = path.split("/")[3]
        urn = f"urn:li:image:C4E10AQ{number}"
        if urn not in self.images or not body:
            return error(400, "BAD_REQUEST", "no upload is waiting at this URL")
        self.images[urn]["data"] = body
        return Response("", status=201)

    def _post(self, seen: Seen) -> Response:
        post = seen.json
        if not isinstance(post, dict) or set(post) - POST_KEYS or not AUTHOR.match(str(post.get("author", ""))):
            return error(422, "UNPROCESSABLE_ENTITY", "/author :: the post is not a valid Post")
        if post.get("lifecycleState") != "PUBLISHED" or post.get("visibility") not in ("PUBLIC", "CONNECTIONS",
                                                                                       "LOGGED_IN"):
            return error(422, "UNPROCESSABLE_ENTITY", "/lifecycleState :: PUBLISHED is the only state a post takes")
        distribution = post.get("distribution") or {}
        if distribution.get("feedDistribution") not in ("MAIN_FEED", "NONE"):
            return error(422, "UNPROCESSABLE_ENTITY", "/distribution/feedDistribution :: field is required")
        if len(post.get("commentary", "")) > 3000:
            return error(422, "UNPROCESSABLE_ENTITY", "/commentary :: length must be at most 3000")
        content = post.get("content") or {}
        named = ([content["media"]] if "media" in content else
                 (content.get("multiImage") or {}).get("images", []) if "multiImage" in content else [])
        if "multiImage" in content and not 2 <= len(named) <= 20:
            return error(422, "UNPROCESSABLE_ENTITY", "/content/multiImage/images :: 2 to 20 images")
        for image in named:
            known = self.images.get(image.get("id"))
            if known is None or known["data"] is None or known["owner"] != post["author"]:
                return error(422, "UNPROCESSABLE_ENTITY", f"/content :: image {image.get('id')} is not available")
        if any(earlier["commentary"] == post.get("commentary") and post.get("commentary") for earlier in self.posts):
            return error(422, "DUPLICATE_POST", f"Content is a duplicate of urn:li:share:{self._next}", 0)
        self._next += 1
        urn = f"urn:li:share:{self._next}"
        self.posts.append({**post, "urn": urn})
        return Response("", status=201, headers={"x-restli-id": urn, "x-linkedin-id": urn})
