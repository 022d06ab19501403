"""Telegram's Bot API on a pytest-httpserver: ``sendMessage``, ``sendPhoto``, ``sendVideo``, ``sendAnimation`` and
``sendMediaGroup`` at ``/bot<token>/<method>``, as documented.

Answers are ``{"ok": true, "result": ...}``, errors ``{"ok": false, "error_code", "description",
"parameters"}``: a wrong token 401 "Unauthorized", an unknown chat 400 "Bad Request: chat not
found", text over 4,096 characters "message is too long", a caption over 1,024 "message caption
is too long", an album of fewer than 2 or more than 10 items, or one naming an ``attach://``
file it does not carry, 400. ``answer_next(method, ...)`` queues a canned answer (429 with
``parameters.retry_after``, 403 "bot was blocked by the user"...).
"""

import itertools
import json
import re

from werkzeug import Response

from tests.fakes.recording import Received, json_response

MAX_TEXT, MAX_CAPTION = 4096, 1024
SINGLE_FIELDS = {"sendPhoto": "photo", "sendVideo": "video", "sendAnimation": "animation"}


class FakeTelegram:
    def __init__(self, server, token: str = "123456:ABC-test-token", chats=("-1001234567890",)):
        self.server, self.token, self.chats = server, token, set(chats)
        self.received: list[Received] = []
        self.messages: list[dict] = []
        self._queued: dict[str, list] = {}
        self._ids = itertools.count(501)
        server.expect_request(re.compile(r"^/bot[^/]+/\w+$"), method="POST").respond_with_handler(self._api)

    @property
    def url(self) -> str:
        return self.server.url_for("").rstrip("/")

    def answer_next(self, method: str, body: dict, status: int) -> None:
        self._queued.setdefault(method, []).append((status, body))

    def requests_to(self, method: str) -> list[Received]:
        return [r for r in self.received if r.path.endswith(f"/{method}")]

    def _api(self, request) -> Response:
        received = Received.of(request)
        self.received.append(received)
        _, token, method = request.path.split("/", 2)
        if token != f"bot{self.token}":
            return _error(401, "Unauthorized")
        if self._queued.get(method):
            status, body = self._queued[method].pop(0)
            return json_response(body, status)
        fields = received.json if isinstance(received.json, dict) else received.form
        if str(fields.get("chat_id")) not in self.chats:
            return _error(400, "Bad Request: chat not found")
        if method == "sendMessage":
            return self._send_message(fields)
        if method in SINGLE_FIELDS:
            return self._send_single(method, fields, received.files)
        if method == "sendMediaGroup":
            return self._send_media_group(fields, received.files)
        return _error(404, "Not Found")

    def _message(self, chat, **what) -> dict:
        message = {"message_id": next(self._ids), "date": 1780000000, "chat": {"id": int(chat), "type": "supergroup"},
                   **what}
        self.messages.append(message)
        return message

    def _send_message(self, fields) -> Response:
        text = fields.get("text") or ""
        if not text:
            return _error(400, "Bad Request: message text is empty")
        if len(text) > MAX_TEXT:
            return _error(400, "Bad Request: message is too long")
        return json_response({"ok": True, "result": self._message(fields["chat_id"], text=text)})

    def _send_single(self, method: str, fields, files) -> Response:
        field = SINGLE_FIELDS[method]
        if field not in files:
            return _error(400, f"Bad Request: there is no {field} in the request")
        caption = fields.get("caption") or ""
        if len(caption) > MAX_CAPTION:
            return _error(400, "Bad Request: message caption is too long")
        return json_response({"ok": True, "result": self._message(fields["chat_id"], caption=caption,
                                                                  **{field: {"file_id": f"AgAC{next(self._ids)}"}})})

    def _send_media_group(self, fields, files) -> Response:
        try:
            media = json.loads(fields.get("media") or "")
        except json.JSONDecodeError:
            return _error(400, "Bad Request: can't parse media JSON object")
        if not isinstance(media, list) or not 2 <= len(media) <= 10:
            return _error(400, "Bad Request: wrong number of media items: 2-10 are allowed")
        sent = []
        for item in media:
            name = str(item.get("media", "")).removeprefix("attach://")
            if item.get("type") not in ("photo", "video") or name not in files:
                return _error(400, f"Bad Request: wrong file identifier/HTTP URL specified for {name}")
            if len(item.get("caption") or "") > MAX_CAPTION:
                return _error(400, "Bad Request: message caption is too long")
        for item in media:
            sent.append(self._message(fields["chat_id"], caption=item.get("caption", ""), media_group_id="1314"))
        return json_response({"ok": True, "result": sent})


def _error(code: int, description: str, parameters: dict | None = None) -> Response:
    body = {"ok": False, "error_code": code, "description": description}
    if parameters:
        body["parameters"] = parameters
    return json_response(body, code)
