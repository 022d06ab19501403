"""A Discord webhook on a pytest-httpserver: Execute Webhook (``POST /api/webhooks/{id}/{token}``), as documented.

It refuses what Discord refuses: a wrong token (401, code 50027), content over 2,000
characters or an attachment without its ``files[n]`` (400, code 50035); without ``?wait=true``
it answers 204 and no message, as Discord does. ``answer_next`` queues canned answers
(429 with ``retry_after``, 404 "Unknown Webhook", 5xx...) served before the normal one.
"""

import itertools
import json
import re

from werkzeug import Response

from tests.fakes.recording import Received, json_response

MAX_CONTENT = 2000
MAX_FILES = 10


class FakeDiscord:
    def __init__(self, server, webhook_id: str = "112233445566778899", token: str = "wh-token-Zq9"):
        self.server, self.webhook_id, self.token = server, webhook_id, token
        self.received: list[Received] = []
        self.messages: list[dict] = []
        self._queued: list[tuple[int, object, dict]] = []
        self._ids = itertools.count(1300000000000000001)
        server.expect_request(re.compile(rf"^/api/webhooks/{webhook_id}/[^/]+$"), method="POST").respond_with_handler(
            self._execute)

    @property
    def url(self) -> str:
        """The channel's ``url``: the webhook's URL without its token."""
        return self.server.url_for(f"/api/webhooks/{self.webhook_id}")

    def answer_next(self, status: int, body=None, headers: dict | None = None) -> None:
        self._queued.append((status, body, headers or {}))

    def _execute(self, request) -> Response:
        received = Received.of(request)
        self.received.append(received)
        if request.path.rsplit("/", 1)[1] != self.token:
            return json_response({"message": "Invalid Webhook Token", "code": 50027}, 401)
        if self._queued:
            status, body, headers = self._queued.pop(0)
            return json_response(body, status, headers) if body is not None else Response("", status, headers)
        if received.json is not None:
            message, files = received.json, {}
        elif "payload_json" in received.form:
            message, files = json.loads(received.form["payload_json"]), received.files
        else:
            return _invalid("payload_json", "This field is required")
        content = message.get("content") or ""
        if len(content) > MAX_CONTENT:
            return _invalid("content", f"Must be {MAX_CONTENT} or fewer in length.")
        attachments = message.get("attachments") or []
        if len(files) > MAX_FILES:
            return _invalid("files", f"Must be {MAX_FILES} or fewer in length.")
        for attachment in attachments:
            if f"files[{attachment.get('id')}]" not in files:
                return _invalid(f"attachments.{attachment.get('id')}", "Unknown attachment: no files[n] part")
        if not content and not files:
            return json_response({"message": "Cannot send an empty message", "code": 50006}, 400)
        if request.args.get("wait") != "true":
            return Response("", 204)
        sent = {"id": str(next(self._ids)), "channel_id": "998877665544332211", "content": content,
                "attachments": [{"id": str(next(self._ids)), "filename": a.get("filename"),
                                 "description": a.get("description")} for a in attachments],
                "mentions": [], "mention_everyone": False, "webhook_id": self.webhook_id}
        self.messages.append(sent)
        return json_response(sent)


def _invalid(where: str, said: str) -> Response:
    return json_response({"message": "Invalid Form Body", "code": 50035,
                          "errors": {where: {"_errors": [{"code": "BASE_TYPE_INVALID", "message": said}]}}}, 400)
