"""Slack's Web API on a pytest-httpserver: ``chat.postMessage`` and the external file upload, as documented.

Errors come as Slack sends them, HTTP 200 with ``{"ok": false, "error": ...}``: a wrong
token is ``invalid_auth``, an unknown conversation ``channel_not_found``, text over 40,000
characters ``msg_too_long``. A file is uploaded in three steps: ``files.getUploadURLExternal``
(form ``filename``, ``length``, optional ``alt_txt``) answers an ``upload_url`` on this server
and a ``file_id``; the bytes are POSTed there (their length must be the one declared); then
``files.completeUploadExternal`` (JSON ``files``, ``channel_id``, ``thread_ts``) shares them.
``answer_next(method, ...)`` queues a canned answer for one method.
"""

import itertools
import re

from werkzeug import Response

from tests.fakes.recording import Received, json_response

MAX_TEXT = 40_000


class FakeSlack:
    def __init__(self, server, token: str = "xoxb-1-test", channels=("C0TICKWORK",)):
        self.server, self.token, self.channels = server, token, set(channels)
        self.received: list[Received] = []
        self.messages: list[dict] = []
        self.uploads: dict[str, dict] = {}  # file id → filename, length, alt_txt, bytes
        self.shared: list[dict] = []  # completeUploadExternal calls that succeeded
        self._queued: dict[str, list] = {}
        self._ts = itertools.count(1)
        self._file_ids = itertools.count(1)
        for method in ("chat.postMessage", "files.getUploadURLExternal", "files.completeUploadExternal"):
            server.expect_request(f"/api/{method}", method="POST").respond_with_handler(
                lambda request, method=method: self._api(method, request))
        server.expect_request(re.compile(r"^/upload/v1/F\w+$"), method="POST").respond_with_handler(
            self._upload)

    @property
    def url(self) -> str:
        return self.server.url_for("/api")

    def answer_next(self, method: str, body: dict, status: int = 200, headers: dict | None = None) -> None:
        self._queued.setdefault(method, []).append((status, body, headers or {}))

    def requests_to(self, method: str) -> list[Received]:
        return [r for r in self.received if r.path == f"/api/{method}"]

    def _api(self, method: str, request) -> Response:
        received = Received.of(request)
        self.received.append(received)
        if request.headers.get("Authorization") != f"Bearer {self.token}":
            return json_response({"ok": False, "error": "invalid_auth"})
        if self._queued.get(method):
            status, body, headers = self._queued[method].pop(0)
            return json_response(body, status, headers)
        return getattr(self, "_" + method.replace(".", "_"))(received)

    def _chat_postMessage(self, received: Received) -> Response:
        body = received.json if isinstance(received.json, dict) else received.form
        if body.get("channel") not in self.channels:
            return json_response({"ok": False, "error": "channel_not_found"})
        text = body.get("text") or ""
        if not text:
            return json_response({"ok": False, "error": "no_text"})
        if len(text) > MAX_TEXT:
            return json_response({"ok": False, "error": "msg_too_long"})
        message = {"type": "message", "text": text, "ts": f"1780000000.{next(self._ts):06d}", "bot_id": "B0TICK"}
        self.messages.append({**message, "channel": body["channel"]})
        return json_response({"ok": True, "channel": body["channel"], "ts": message["ts"], "message": message})

    def _files_getUploadURLExternal(self, received: Received) -> Response:
        form = received.form
        if not form.get("filename") or not str(form.get("length", "")).isdecimal():
            return json_response({"ok": False, "error": "invalid_arguments"})
        file_id = f"F{next(self._file_ids):010d}"
        self.uploads[file_id] = {"filename": form["filename"], "length": int(form["length"]),
                                 "alt_txt": form.get("alt_txt"), "bytes": None}
        return json_response({"ok": True, "upload_url": self.server.url_for(f"/upload/v1/{file_id}"),
                              "file_id": file_id})

    def _upload(self, request) -> Response:
        received = Received.of(request)
        self.received.append(received)
        upload = self.uploads.get(request.path.rsplit("/", 1)[1])
        data = received.body or next(iter(received.files.values()), (None, None, b""))[2]
        if upload is None or len(data) != upload["length"]:
            return Response("Invalid upload: the length does not match", 400)
        upload["bytes"] = data
        return Response(f"OK - {len(data)}", 200, content_type="text/plain")

    def _files_completeUploadExternal(self, received: Received) -> Response:
        body = received.json if isinstance(received.json, dict) else {}
        files = body.get("files")
        if not isinstance(files, list) or not files:
            return json_response({"ok": False, "error": "invalid_arguments"})
        for item in files:
            upload = self.uploads.get(item.get("id"))
            if upload is None or upload["bytes"] is None:
                return json_response({"ok": False, "error": "file_not_found"})
        if body.get("channel_id") is not None and body["channel_id"] not in self.channels:
            return json_response({"ok": False, "error": "channel_not_found"})
        self.shared.append(body)
        return json_response({"ok": True, "files": [{"id": item["id"], "title": item.get("title")} for item in files]})
