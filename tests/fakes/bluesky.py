"""A Bluesky PDS on a pytest-httpserver, speaking the XRPC methods Tickwork calls as the lexicons define them.

``com.atproto.server.createSession`` / ``refreshSession``, ``com.atproto.repo.uploadBlob``,
``com.atproto.identity.resolveHandle``, ``com.atproto.repo.createRecord`` and ``getRecord``.
Errors come as XRPC errors do: a status and ``{"error": Name, "message": ...}``. A record key
already in the repository is refused with a 500, as today's PDS does. It records every request
(``calls``) and keeps its repository (``records``), so a test can assert on what was sent and
on how many posts exist.

Scripting: ``fail_next(nsid, status, error, message, headers=..., create_anyway=False)`` makes
the next call of ``nsid`` answer that (a createRecord with ``create_anyway`` makes the record
first, as a PDS whose answer is lost would); ``stall_next(nsid, seconds, create_anyway=True)``
answers late (after the client's timeout); ``expire_access()`` makes the current access token
answer ``ExpiredToken``.
"""

import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field

import regex
from werkzeug import Request, Response

TID = regex.compile(r"^[234567abcdefghij][234567abcdefghijklmnopqrstuvwxyz]{12}$")
GRAPHEME = regex.compile(r"\X")


@dataclass
class Call:
    nsid: str
    method: str
    headers: dict
    args: dict
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class BlueskyFake:
    httpserver: object
    handle: str = "acme.bsky.social"
    password: str = "app-pass-word-1234"
    did: str = "did:plc:acme1234567890abcdefghij"
    known_handles: dict = field(default_factory=lambda: {"alice.bsky.social": "did:plc:alice0000000000000000000"})
    calls: list = field(default_factory=list)
    records: dict = field(default_factory=dict)  # rkey -> (record, cid)
    blobs: dict = field(default_factory=dict)
    taken_down: bool = False
    _access: set = field(default_factory=set)
    _expired: set = field(default_factory=set)
    _refresh: set = field(default_factory=set)
    _script: dict = field(default_factory=dict)

    def __post_init__(self):
        for nsid, method in (("com.atproto.server.createSession", "POST"), ("com.atproto.server.refreshSession", "POST"),
                             ("com.atproto.repo.uploadBlob", "POST"), ("com.atproto.identity.resolveHandle", "GET"),
                             ("com.atproto.repo.createRecord", "POST"), ("com.atproto.repo.getRecord", "GET")):
            self.httpserver.expect_request(f"/xrpc/{nsid}", method=method).respond_with_handler(
                lambda request, nsid=nsid: self._handle(nsid, request))

    @property
    def url(self) -> str:
        return self.httpserver.url_for("").rstrip("/")

    # -- scripting -------------------------------------------------------------------------

    def fail_next(self, nsid: str, status: int, error: str, message: str = "", *, headers: dict | None = None,
                  create_anyway: bool = False) -> None:
        self._script.setdefault(nsid, []).append(("fail", status, error, message, headers or {}, create_anyway))

    def stall_next(self, nsid: str, seconds: float, *, create_anyway: bool = True) -> None:
        self._script.setdefault(nsid, []).append(("stall", seconds, create_anyway))

    def expire_access(self) -> None:
        self._expired |= self._access
        self._access = set()

    def named(self, nsid: str) -> list[Call]:
        return [call for call in self.calls if call.nsid == nsid]

    def uri(self, rkey: str) -> str:
        return f"at://{self.did}/app.bsky.feed.post/{rkey}"

    # -- the server ------------------------------------------------------------------------

    def _handle(self, nsid: str, request: Request) -> Response:
        body = request.get_data()
        self.calls.append(Call(nsid, request.method, dict(request.headers), dict(request.args), body))
        script = self._script.get(nsid)
        if script:
            step = script.pop(0)
            if step[0] == "fail":
                _, status, error, message, headers, create_anyway = step
                if create_anyway:
                    answer = self._serve(nsid, request, body)
                    if answer.status_code != 200:
                        return answer
                return _error(status, error, message, headers)
            _, seconds, create_anyway = step
            answer = self._serve(nsid, request, body) if create_anyway else None
            time.sleep(seconds)  # past the client's timeout: the answer is lost
            return answer or _error(500, "InternalServerError", "too late")
        return self._serve(nsid, request, body)

    def _serve(self, nsid: str, request: Request, body: bytes) -> Response:
        if nsid == "com.atproto.server.createSession":
            return self._create_session(body)
        if nsid == "com.atproto.server.refreshSession":
            return self._refresh_session(request)
        if nsid == "com.atproto.identity.resolveHandle":
            did = self.known_handles.get(request.args.get("handle", ""))
            return _ok({"did": did}) if did else _error(400, "HandleNotFound", "Unable to resolve handle")
        if nsid == "com.atproto.repo.getRecord":
            return self._get_record(request)
        refused = self._auth(request)
        if refused is not None:
            return refused
        if nsid == "com.atproto.repo.uploadBlob":
            return self._upload_blob(request, body)
        return self._create_record(body)

    def _tokens(self) -> dict:
        access, refresh = "acc-" + secrets.token_hex(8), "ref-" + secrets.token_hex(8)
        self._access.add(access)
        self._refresh.add(refresh)
        return {"accessJwt": access, "refreshJwt": refresh, "handle": self.handle, "did": self.did, "active": True}

    def _create_session(self, body: bytes) -> Response:
        try:
            given = json.loads(body)
        except ValueError:
            return _error(400, "InvalidRequest", "Request body must be JSON")
        if not isinstance(given, dict) or not {"identifier", "password"} <= set(given):
            return _error(400, "InvalidRequest", 'Input must have the property "identifier" and "password"')
        if given["identifier"] != self.handle or given["password"] != self.password:
            return _error(401, "AuthenticationRequired", "Invalid identifier or password")
        if self.taken_down:
            return _error(400, "AccountTakedown", "Account has been taken down")
        return _ok(self._tokens())

    def _refresh_session(self, request: Request) -> Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token not in self._refresh:
            return _error(400, "ExpiredToken", "Token has expired")
        self._refresh.discard(token)
        return _ok(self._tokens())

    def _auth(self, request: Request) -> Response | None:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if token in self._expired:
            return _error(400, "ExpiredToken", "Token has expired")
        if token not in self._access:
            return _error(401, "AuthenticationRequired", "Authentication Required")
        return None

    def _upload_blob(self, request: Request, body: bytes) -> Response:
        mime = request.headers.get("Content-Type", "")
        if not mime.startswith("image/"):
            return _error(400, "InvalidRequest", f"Unsupported blob type {mime!r}")
        if len(body) > 1_000_000:
            return _error(400, "BlobTooLarge", "This file is too large. It is 1.00MB but the maximum size is 976.56KB.")
        cid = "bafkrei" + hashlib.sha256(body).hexdigest()[:52]
        self.blobs[cid] = body
        return _ok({"blob": {"$type": "blob", "ref": {"$link": cid}, "mimeType": mime, "size": len(body)}})

    def _create_record(self, body: bytes) -> Response:
        try:
            given = json.loads(body)
        except ValueError:
            return _error(400, "InvalidRequest", "Request body must be JSON")
        if given.get("repo") not in (self.did, self.handle):
            return _error(400, "InvalidRequest", "Could not find repo")
        if given.get("collection") != "app.bsky.feed.post":
            return _error(400, "InvalidRequest", "Invalid collection")
        rkey = given.get("rkey")
        if not isinstance(rkey, str) or not TID.match(rkey):
            return _error(400, "InvalidRequest", "Invalid record key: app.bsky.feed.post keys are TIDs")
        problem = _post_problem(given.get("record"), self.blobs) or self._reply_problem(given.get("record"))
        if problem:
            return _error(400, "InvalidRequest", f"Invalid app.bsky.feed.post record: {problem}")
        if rkey in self.records:
            return _error(500, "InternalServerError", "Internal Server Error")  # today's PDS on a key that exists
        cid = "bafyrei" + hashlib.sha256(body).hexdigest()[:52]
        self.records[rkey] = (given["record"], cid)
        return _ok({"uri": self.uri(rkey), "cid": cid, "validationStatus": "valid"})

    def _reply_problem(self, record: dict) -> str | None:
        """A reply's ``root`` and ``parent`` must be strong refs (uri and cid) to posts this repository holds, with
        the cid the record has: what the lexicon requires and what an AppView needs to thread it."""
        reply = record.get("reply")
        if reply is None:
            return None
        if not isinstance(reply, dict) or set(reply) != {"root", "parent"}:
            return "reply must have root and parent"
        for role in ("root", "parent"):
            ref = reply[role]
            if not isinstance(ref, dict) or not isinstance(ref.get("uri"), str) or not isinstance(ref.get("cid"), str):
                return f"reply/{role} must be a strong ref with uri and cid"
            rkey = ref["uri"].rsplit("/", 1)[-1]
            if ref["uri"] != self.uri(rkey) or rkey not in self.records or self.records[rkey][1] != ref["cid"]:
                return f"reply/{role} does not name a post in this repository"
        return None

    def replies(self) -> list[tuple[str, dict]]:
        """``(rkey, reply)`` of every record that is a reply, in the order they were made."""
        return [(rkey, record["reply"]) for rkey, (record, _) in self.records.items() if "reply" in record]

    def _get_record(self, request: Request) -> Response:
        args = request.args
        if not {"repo", "collection", "rkey"} <= set(args):
            return _error(400, "InvalidRequest", "Params must have the properties repo, collection and rkey")
        if args["repo"] not in (self.did, self.handle) or args["collection"] != "app.bsky.feed.post" \
                or args["rkey"] not in self.records:
            return _error(400, "RecordNotFound", f"Could not locate record: at://{args['repo']}/{args['collection']}/"
                                                 f"{args['rkey']}")
        record, cid = self.records[args["rkey"]]
        return _ok({"uri": self.uri(args["rkey"]), "cid": cid, "value": record})


def _post_problem(record, blobs: dict) -> str | None:
    """What makes ``record`` an invalid app.bsky.feed.post (the lexicon's rules Tickwork's posts touch), or None."""
    if not isinstance(record, dict) or record.get("$type") != "app.bsky.feed.post":
        return "$type must be app.bsky.feed.post"
    text = record.get("text")
    if not isinstance(text, str) or not isinstance(record.get("createdAt"), str):
        return "text and createdAt are required"
    if len(GRAPHEME.findall(text)) > 300 or len(text.encode()) > 3000:
        return "text must not be longer than 300 graphemes or 3000 bytes"
    size = len(text.encode())
    for facet in record.get("facets", []):
        index = facet.get("index", {})
        if not 0 <= index.get("byteStart", -1) < index.get("byteEnd", -1) <= size or not facet.get("features"):
            return "facet index out of range"
    embed = record.get("embed")
    if embed is not None:
        if embed.get("$type") == "app.bsky.embed.images":
            images = embed.get("images", [])
            if not 1 <= len(images) <= 4:
                return "embed/images must have 1 to 4 items"
            for image in images:
                if "alt" not in image or image.get("image", {}).get("ref", {}).get("$link") not in blobs:
                    return "each image needs alt and an uploaded blob"
        elif embed.get("$type") == "app.bsky.embed.external":
            external = embed.get("external", {})
            if not {"uri", "title", "description"} <= set(external):
                return "embed/external must have uri, title and description"
            if "thumb" in external and external["thumb"].get("ref", {}).get("$link") not in blobs:
                return "embed/external/thumb must be an uploaded blob"
        else:
            return "unknown embed"
    return None


def _ok(body: dict) -> Response:
    return Response(json.dumps(body), status=200, content_type="application/json")


def _error(status: int, error: str, message: str = "", headers: dict | None = None) -> Response:
    return Response(json.dumps({"error": error, "message": message}), status=status, content_type="application/json",
                    headers=headers or {})
