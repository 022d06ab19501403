"""Meta's Graph API as Threads, Facebook and Instagram document it, on a pytest-httpserver, recording every request.

One fake for the three networks (they share the Graph API's shape and its error object):

Each network answers under its own root on the server (``/threads/v1.0``, ``/facebook/v21.0``,
``/instagram/v21.0``), as each has its own host at Meta, so one server can hold all three:

| network | root | calls |
|---|---|---|
| threads | ``/threads/v1.0`` | ``POST /{user}/threads``, ``GET /{container}?fields=status,error_message``, ``POST /{user}/threads_publish`` |
| facebook | ``/facebook/v21.0`` | ``POST /{page}/feed``, ``POST /{page}/photos`` (multipart ``source``), ``POST /{post}/comments`` |
| instagram | ``/instagram/v21.0`` | ``POST /{ig-user}/media``, ``GET /{container}?fields=status_code``, ``POST /{ig-user}/media_publish``, ``GET /{ig-user}/content_publishing_limit``, ``POST /{media}/comments`` |

A Threads container with ``reply_to_id`` must answer a post the fake published; a comment
(``message``) must go under a post it published. ``comments`` keeps them.

It refuses what the network refuses: a missing or wrong bearer token (code 190), a missing
required parameter (code 100), a carousel of unknown or too few children, publishing a
container that is not ``FINISHED``, media links outside the Tickwork base URL it was told
about (the container ends in ``ERROR``: Meta could not fetch it). ``statuses`` lists what the
next status reads answer (then ``FINISHED``); :meth:`fail` makes the next call of a step
answer an error.

It also connects accounts as Meta documents its OAuth (:meth:`MetaGraph.approve` plays the
person at the authorization dialog):

| step | threads | instagram | facebook |
|---|---|---|---|
| the code | ``POST /oauth/access_token`` (form: client_id, client_secret, code, grant_type, redirect_uri) → ``{access_token, user_id}`` | the same → ``{"data": [{access_token, user_id, permissions}]}`` | the same (GET or POST) → ``{access_token, token_type, expires_in}`` |
| long-lived | ``GET /access_token?grant_type=th_exchange_token&client_secret&access_token`` | ``grant_type=ig_exchange_token`` | ``GET /oauth/access_token?grant_type=fb_exchange_token&client_id&client_secret&fb_exchange_token`` |
| renewal | ``GET /refresh_access_token?grant_type=th_refresh_token&access_token`` | ``ig_refresh_token`` | none: ``GET /{page-id}?fields=access_token`` and ``/me/accounts`` give the Page's own token |
| profile | ``GET /me?fields=id,username,threads_profile_picture_url`` | ``GET /me?fields=user_id,username,profile_picture_url`` | ``GET /me?fields=id,name,picture`` (with a Page token: the Page) |

A short-lived token is good for the profile only: publishing, renewal and the Page's token take a
long-lived one (Meta refreshes only long-lived tokens), so a connection that kept the code's
token would fail its first post. Every token the fake issues is recorded by kind.
"""

import io
import itertools
import json
import re
import secrets
from urllib.parse import parse_qs, urlsplit
from collections import deque
from dataclasses import dataclass, field

from werkzeug import Request, Response

VERSIONS = {"threads": "v1.0", "facebook": "v21.0", "instagram": "v21.0"}
CAROUSEL_LIMITS = {"threads": (2, 20), "instagram": (2, 10)}
TEXT_LIMITS = {"threads": 500, "instagram": 2200, "facebook": 63_206}


@dataclass
class Seen:
    """One request as the fake received it."""

    method: str
    path: str
    step: str  # create, status, publish, feed, photos, limit, comments
    form: dict
    query: dict
    headers: dict
    files: dict = field(default_factory=dict)  # name -> (filename, bytes, content type)


def _avatar_png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (120, 120), (200, 80, 40)).save(out, format="PNG")
    return out.getvalue()


def error_body(code: int, message: str, *, subcode: int | None = None, type_: str = "OAuthException") -> dict:
    error = {"message": message, "type": type_, "code": code, "fbtrace_id": "AbCdEfGh123"}
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": error}


class MetaGraph:
    def __init__(self, httpserver, network: str, *, token: str = "meta-token", account: str = "17841400000000001",
                 media_base: str | None = None):
        self.network, self.account, self.media_base = network, account, media_base
        self._token = token
        self.root = f"/{network}/{VERSIONS[network]}"  # what every path it answers starts with
        self.base = httpserver.url_for(self.root).rstrip("/")
        self.requests: list[Seen] = []
        self.statuses: deque[str] = deque()
        self.containers: dict[str, dict] = {}
        self.photos: dict[str, dict] = {}
        self.published: list[dict] = []
        self.comments: list[dict] = []
        self.quota_total, self.quota_duration, self.quota_usage = 100, 86400, 0
        self._failures: dict[str, deque] = {}
        self._ids = itertools.count(18_000_000_001)
        # Connecting: the app registered with Meta, codes issued, and tokens by what they are.
        self.client_id, self.client_secret = "tickwork-test-client", "tickwork-test-secret"
        self.codes: dict[str, dict] = {}
        self.short_tokens: set[str] = set()
        self.long_tokens: set[str] = {token}  # publishing takes these (on Facebook: the Page tokens)
        self.user_tokens: set[str] = set()  # Facebook: long-lived user tokens, which read Page tokens
        self.pages = {account: "Acme Bakery"}  # Facebook: the Pages the person manages
        self.oauth_requests: list[Seen] = []
        self.username = "acmebakery"
        httpserver.expect_request(re.compile(rf"^{re.escape(self.root)}/.*")).respond_with_handler(self._handle)

    @property
    def token(self) -> str:
        """The token given to the channel by hand; setting another makes Meta forget this one."""
        return self._token

    @token.setter
    def token(self, value: str) -> None:
        self.long_tokens.discard(self._token)
        self._token = value
        self.long_tokens.add(value)

    # -- what a test tells it ---------------------------------------------------------------
    def fail(self, step: str, status: int = 400, *, code: int, message: str = "An error occurred",
             subcode: int | None = None, headers: dict | None = None, times: int = 1, body: dict | None = None):
        """The next ``times`` calls of ``step`` answer ``status`` with this Graph error (or ``body``)."""
        answer = (status, body if body is not None else error_body(code, message, subcode=subcode), headers or {})
        self._failures.setdefault(step, deque()).extend([answer] * times)

    def of(self, step: str) -> list[Seen]:
        return [seen for seen in self.requests if seen.step == step]

    def approve(self, authorize_url: str) -> tuple[str, str]:
        """The person approves at Meta's authorization dialog: the code and state their browser comes back with."""
        query = {key: values[0] for key, values in parse_qs(urlsplit(authorize_url).query).items()}
        assert query.get("client_id") == self.client_id and query.get("response_type") == "code", query
        code = secrets.token_urlsafe(16)
        self.codes[code] = query
        return code, query["state"]

    def oauth(self, step: str) -> list[Seen]:
        return [seen for seen in self.oauth_requests if seen.step == step]

    # -- connecting ---------------------------------------------------------------------------
    OAUTH_PATHS = {("oauth", "access_token"): "code", ("access_token",): "exchange",
                   ("refresh_access_token",): "refresh"}

    def _issue(self, kept: set, expires_in: int | None = None) -> dict:
        token = secrets.token_urlsafe(24)
        kept.add(token)
        return {"access_token": token, "token_type": "bearer", **({"expires_in": expires_in} if expires_in else {})}

    def _oauth_error(self, message: str, code: int = 190, subcode: int | None = None) -> Response:
        return self._json(error_body(code, message, subcode=subcode), 400)

    def _connect(self, request: Request, step: str, params: dict) -> Response:
        if step == "code":
            asked = self.codes.pop(params.get("code", ""), None)  # a code answers once
            if params.get("client_id") != self.client_id or params.get("client_secret") != self.client_secret:
                return self._oauth_error("Error validating client secret.", code=1)
            if asked is None or params.get("redirect_uri") != asked.get("redirect_uri") \
                    or params.get("grant_type", "authorization_code") != "authorization_code":
                return self._oauth_error("Error validating verification code. Please make sure your redirect_uri is "
                                         "identical to the one you used in the OAuth dialog request", code=100,
                                         subcode=36008)
            if self.network == "facebook":
                return self._json(self._issue(self.short_tokens, 5400))
            issued = {"access_token": self._issue(self.short_tokens)["access_token"], "user_id": int(self.account)}
            if self.network == "instagram":
                return self._json({"data": [{**issued, "user_id": self.account,
                                             "permissions": "instagram_business_basic,"
                                                            "instagram_business_content_publish"}]})
            return self._json(issued)
        if step == "exchange":
            if self.network == "facebook":
                if params.get("client_id") != self.client_id or params.get("client_secret") != self.client_secret:
                    return self._oauth_error("Error validating client secret.", code=1)
                if params.get("fb_exchange_token") not in self.short_tokens | self.user_tokens:
                    return self._oauth_error("Invalid OAuth access token.")
                return self._json(self._issue(self.user_tokens, 5183944))
            grant = {"threads": "th_exchange_token", "instagram": "ig_exchange_token"}[self.network]
            if params.get("grant_type") != grant:
                return self._oauth_error(f"Unsupported grant_type (expected {grant})", code=100)
            if params.get("client_secret") != self.client_secret:
                return self._oauth_error("Error validating client secret.", code=1)
            if params.get("access_token") not in self.short_tokens:
                return self._oauth_error("Invalid OAuth access token - Cannot parse access token")
            return self._json(self._issue(self.long_tokens, 5183944))
        grant = {"threads": "th_refresh_token", "instagram": "ig_refresh_token"}.get(self.network)
        if grant is None or params.get("grant_type") != grant:
            return self._oauth_error("Unsupported grant_type", code=100)
        if params.get("access_token") not in self.long_tokens:  # Meta renews long-lived tokens only
            return self._oauth_error("Error validating access token: the token is not a long-lived token")
        return self._json(self._issue(self.long_tokens, 5183944))

    def _profile(self, token: str | None, params: dict, parts: list[str]) -> Response | None:
        """``/me`` (the account, or with a Page token the Page), ``/me/accounts`` and ``/{page}?fields=access_token``
        (Facebook, with a long-lived user token); None when the request is none of these."""
        fields = params.get("fields", "").split(",")
        if parts == ["me"]:
            if token not in self.short_tokens | self.long_tokens | self.user_tokens:
                return self._oauth_error("Invalid OAuth access token - Cannot parse access token")
            avatar = self.base + "/avatar.png"
            if self.network == "threads":
                return self._json({"id": self.account, "username": self.username,
                                   "threads_profile_picture_url": avatar})
            if self.network == "instagram":
                return self._json({"user_id": self.account, "username": self.username, "id": self.account,
                                   "profile_picture_url": avatar})
            if token in self.long_tokens:  # a Page token: the Page
                return self._json({"id": self.account, "name": self.pages.get(self.account, "Page"),
                                   "picture": {"data": {"url": avatar, "is_silhouette": False}}})
            return self._json({"id": "10220000000000001", "name": "Ada Baker"})
        if parts == ["avatar.png"]:
            return Response(_avatar_png(), content_type="image/png")
        wants_page = self.network == "facebook" and (parts == ["me", "accounts"] or (
            len(parts) == 1 and "access_token" in fields))
        if not wants_page:
            return None
        if token not in self.user_tokens:  # a Page token is read with the person's long-lived user token
            return self._oauth_error("(#190) This method must be called with a User access token (long-lived)")
        if parts == ["me", "accounts"]:
            return self._json({"data": [{"id": page, "name": name, "category": "Bakery",
                                         "tasks": ["ANALYZE", "ADVERTISE", "MODERATE", "CREATE_CONTENT", "MANAGE"],
                                         "access_token": self._issue(self.long_tokens)["access_token"]}
                                        for page, name in self.pages.items()], "paging": {"cursors": {}}})
        if parts[0] not in self.pages:
            return self._json(error_body(100, "(#100) Tried accessing nonexisting field (access_token)",
                                         type_="GraphMethodException"), 400)
        return self._json({"id": parts[0], "name": self.pages[parts[0]],
                           "access_token": self._issue(self.long_tokens)["access_token"]})

    # -- the network ------------------------------------------------------------------------
    def _handle(self, request: Request) -> Response:
        parts = request.path[len(self.root) + 1:].split("/")
        oauth_step = self.OAUTH_PATHS.get(tuple(parts))
        if oauth_step is not None:
            if oauth_step == "code" and request.args.get("grant_type") == "fb_exchange_token":
                oauth_step = "exchange"  # Facebook trades tokens at the code's endpoint
            seen = Seen(request.method, request.path, oauth_step, request.form.to_dict(), request.args.to_dict(),
                        dict(request.headers))
            self.oauth_requests.append(seen)
            return self._connect(request, oauth_step, {**seen.query, **seen.form})
        header = request.headers.get("Authorization", "")
        token = header[7:] if header.startswith("Bearer ") else request.args.get("access_token")
        profile = self._profile(token, request.args.to_dict(), parts)
        if profile is not None:
            self.oauth_requests.append(Seen(request.method, request.path, "profile" if parts[0] != "avatar.png"
                                            else "avatar", {}, request.args.to_dict(), dict(request.headers)))
            return profile
        step = self._step(request.method, parts)
        files = {name: (storage.filename, storage.read(), storage.mimetype) for name, storage in request.files.items()}
        seen = Seen(request.method, request.path, step, request.form.to_dict(), request.args.to_dict(),
                    dict(request.headers), files)
        self.requests.append(seen)
        if not header.startswith("Bearer ") or token not in self.long_tokens:
            return self._json(error_body(190, "Invalid OAuth access token - Cannot parse access token"), 400)
        if self._failures.get(step):
            status, body, headers = self._failures[step].popleft()
            return self._json(body, status, headers)
        params = {**seen.query, **seen.form}
        handler = getattr(self, f"_{step}", None)
        if handler is None:
            return self._json(error_body(100, f"Unsupported {request.method} request.", subcode=33,
                                         type_="GraphMethodException"), 400)
        if step in ("create", "publish", "feed", "photos", "limit") and parts[0] not in (self.account, "me"):
            return self._json(error_body(100, "(#100) Tried accessing nonexisting field", type_="GraphMethodException"),
                              400)
        return handler(params, seen, parts)

    def _step(self, method: str, parts: list[str]) -> str:
        edge = parts[1] if len(parts) > 1 else None
        if method == "GET" and edge is None:
            return "status"
        return {("POST", "threads"): "create", ("POST", "media"): "create", ("POST", "threads_publish"): "publish",
                ("POST", "media_publish"): "publish", ("POST", "feed"): "feed", ("POST", "photos"): "photos",
                ("GET", "content_publishing_limit"): "limit", ("POST", "comments"): "comments"}.get(
                    (method, edge), "unknown")

    @staticmethod
    def _json(body: dict, status: int = 200, headers: dict | None = None) -> Response:
        return Response(json.dumps(body), status=status, content_type="application/json", headers=headers or {})

    def _missing(self, name: str) -> Response:
        return self._json(error_body(100, f"(#100) The parameter {name} is required"), 400)

    def _new_id(self) -> str:
        return str(next(self._ids))

    def _media_types(self, carousel_item: bool) -> set[str]:
        if self.network == "threads":
            return {"IMAGE", "VIDEO"}
        return {"IMAGE", "VIDEO"} if carousel_item else {"IMAGE", "REELS"}  # a lone Instagram video is a reel

    def _fetchable(self, url: str) -> bool:
        return self.media_base is None or url.startswith(self.media_base.rstrip("/") + "/")

    def _create(self, params: dict, seen: Seen, parts) -> Response:
        text_key = "text" if self.network == "threads" else "caption"
        if len(params.get(text_key, "")) > TEXT_LIMITS[self.network]:
            return self._json(error_body(100, f"(#100) The {text_key} is too long"), 400)
        media_type = params.get("media_type") or ("IMAGE" if self.network == "instagram" else None)
        if media_type is None:
            return self._missing("media_type")
        url_key = {"IMAGE": "image_url", "VIDEO": "video_url", "REELS": "video_url"}.get(media_type)
        if media_type == "TEXT" and self.network == "threads":
            if not params.get("text"):
                return self._missing("text")
        elif media_type == "CAROUSEL":
            children = [child for child in params.get("children", "").split(",") if child]
            low, high = CAROUSEL_LIMITS[self.network]
            if not low <= len(children) <= high or any(not self.containers.get(child, {}).get("item")
                                                       for child in children):
                return self._json(error_body(100, "(#100) The children are not valid carousel items"), 400)
        elif url_key is None or media_type not in self._media_types(params.get("is_carousel_item") == "true"):
            return self._json(error_body(100, f"(#100) media_type {media_type} is not valid here"), 400)
        elif not params.get(url_key):
            return self._missing(url_key)
        if "reply_to_id" in params and (self.network != "threads" or params["reply_to_id"] not in {
                post["id"] for post in self.published}):
            return self._json(error_body(100, "(#100) reply_to_id names no post this account may reply to"), 400)
        container = self._new_id()
        fetched = url_key is None or self._fetchable(params[url_key])
        self.containers[container] = {"params": params, "item": params.get("is_carousel_item") == "true",
                                      "status": "FINISHED" if fetched else "ERROR", "published": False}
        return self._json({"id": container})

    def _status(self, params: dict, seen: Seen, parts) -> Response:
        container = self.containers.get(parts[0])
        if container is None:
            return self._json(error_body(100, "(#100) Object does not exist", subcode=33,
                                         type_="GraphMethodException"), 400)
        fields = params.get("fields", "").split(",")
        status = self.statuses.popleft() if self.statuses else container["status"]
        if status == "FINISHED" and container["status"] == "ERROR":
            status = "ERROR"
        container["seen_status"] = status
        body = {"id": parts[0]}
        if self.network == "threads" and "status" in fields:
            body["status"] = status
            if status == "ERROR" and "error_message" in fields:
                body["error_message"] = "FAILED_DOWNLOADING_VIDEO" if "video_url" in container["params"] else "UNKNOWN"
        if self.network == "instagram" and "status_code" in fields:
            body["status_code"] = status
            if status == "ERROR" and "status" in fields:
                body["status"] = "Error: Media download has failed. (2207052)"
        return self._json(body)

    def _publish(self, params: dict, seen: Seen, parts) -> Response:
        container = self.containers.get(params.get("creation_id", ""))
        if container is None:
            return self._missing("creation_id") if "creation_id" not in params else self._json(
                error_body(24, "The requested resource does not exist", subcode=4279009), 400)
        if container["item"] or container.get("seen_status", container["status"]) != "FINISHED" \
                or container["status"] != "FINISHED" or container["published"]:
            return self._json(error_body(9007, "Media ID is not available", subcode=2207027), 400)
        container["published"] = True
        post = {"id": self._new_id(), "container": params["creation_id"]}
        self.published.append(post)
        return self._json({"id": post["id"]})

    def _comments(self, params: dict, seen: Seen, parts) -> Response:
        """``POST /{post-id}/comments`` (Facebook's Page post, Instagram's media): a comment under a published post."""
        if self.network == "threads" or parts[0] not in {post["id"] for post in self.published}:
            return self._json(error_body(100, "(#100) Object does not exist, cannot be loaded due to missing "
                                              "permissions, or does not support this operation", subcode=33,
                                         type_="GraphMethodException"), 400)
        if not params.get("message"):
            return self._missing("message")
        comment = {"id": self._new_id(), "on": parts[0], "message": params["message"]}
        self.comments.append(comment)
        return self._json({"id": comment["id"]})

    def _limit(self, params: dict, seen: Seen, parts) -> Response:
        fields = params.get("fields", "quota_usage").split(",")
        entry = {"quota_usage": self.quota_usage}
        if "config" in fields:
            entry["config"] = {"quota_total": self.quota_total, "quota_duration": self.quota_duration}
        return self._json({"data": [entry]})

    def _photos(self, params: dict, seen: Seen, parts) -> Response:
        if "source" not in seen.files and not params.get("url"):
            return self._missing("source")
        photo = self._new_id()
        published = params.get("published", "true") != "false"
        self.photos[photo] = {"params": params, "published": published, "attached": False}
        if not published:
            return self._json({"id": photo})
        post = {"id": f"{parts[0]}_{self._new_id()}", "photos": [photo], "message": params.get("message")}
        self.published.append(post)
        return self._json({"id": photo, "post_id": post["id"]})

    def _feed(self, params: dict, seen: Seen, parts) -> Response:
        attached = []
        for key in sorted((key for key in params if key.startswith("attached_media[")),
                          key=lambda key: int(key[len("attached_media["):-1])):
            try:
                fbid = json.loads(params[key])["media_fbid"]
            except (ValueError, KeyError, TypeError):
                return self._json(error_body(100, f"(#100) {key} must be a JSON object with media_fbid"), 400)
            photo = self.photos.get(fbid)
            if photo is None or photo["published"] or photo["attached"]:
                return self._json(error_body(100, f"(#100) {key} names no unpublished photo"), 400)
            attached.append(fbid)
        if not (params.get("message") or params.get("link") or attached):
            return self._json(error_body(100, "(#100) A post needs a message, a link or attached media"), 400)
        if attached and params.get("link"):
            return self._json(error_body(100, "(#100) A link cannot be posted with attached media"), 400)
        for fbid in attached:
            self.photos[fbid]["attached"] = True
        post = {"id": f"{parts[0]}_{self._new_id()}", "photos": attached, "message": params.get("message"),
                "link": params.get("link")}
        self.published.append(post)
        return self._json({"id": post["id"]})
