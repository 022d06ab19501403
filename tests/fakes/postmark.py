"""Postmark's email API on a pytest-httpserver: ``POST /email`` and the outbound message search.

``POST /email`` checks the server token and keeps each message (with its ``Metadata``);
``GET /messages/outbound`` answers ``{"TotalCount", "Messages"}`` filtered by ``metadata_<key>``
as Postmark's search does, with ``count`` and ``offset`` required. ``lagging = True`` hides the
messages from the search (it lags behind sending); ``lose_next_answer(status)`` accepts the next
email and answers ``status`` instead of its MessageID, as a send whose answer is lost.
"""

import json
import uuid
from dataclasses import dataclass, field

from werkzeug import Request, Response


@dataclass
class PostmarkFake:
    httpserver: object
    token: str = "server-token"
    sent: list = field(default_factory=list)  # (MessageID, message)
    searches: list = field(default_factory=list)  # (args, headers)
    lagging: bool = False
    _lose: list = field(default_factory=list)

    def __post_init__(self):
        self.httpserver.expect_request("/email", method="POST").respond_with_handler(self._email)
        self.httpserver.expect_request("/messages/outbound", method="GET").respond_with_handler(self._search)

    @property
    def url(self) -> str:
        return self.httpserver.url_for("").rstrip("/")

    def lose_next_answer(self, status: int = 502) -> None:
        self._lose.append(status)

    def _refused(self, request: Request) -> Response | None:
        if request.headers.get("X-Postmark-Server-Token") != self.token:
            return _json(401, {"ErrorCode": 10, "Message": "The Server Token you provided in the X-Postmark-Server-Token "
                                                          "request header was invalid."})
        if request.headers.get("Accept") != "application/json":
            return _json(406, {"ErrorCode": 0, "Message": "Accept: application/json is required"})
        return None

    def _email(self, request: Request) -> Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        message = json.loads(request.get_data())
        message_id = str(uuid.uuid4())
        self.sent.append((message_id, message))
        if self._lose:
            return Response("upstream trouble", status=self._lose.pop(0))
        return _json(200, {"To": message["To"], "SubmittedAt": "2026-06-01T08:00:00-04:00", "MessageID": message_id,
                           "ErrorCode": 0, "Message": "OK"})

    def _search(self, request: Request) -> Response:
        self.searches.append((dict(request.args), dict(request.headers)))
        refused = self._refused(request)
        if refused is not None:
            return refused
        if "count" not in request.args or "offset" not in request.args:
            return _json(422, {"ErrorCode": 600, "Message": "The 'count' and 'offset' parameters are required."})
        wanted = {key.removeprefix("metadata_"): value for key, value in request.args.items()
                  if key.startswith("metadata_")}
        found = [] if self.lagging else [
            {"MessageID": message_id, "To": [{"Email": message["To"], "Name": None}], "Subject": message["Subject"],
             "Status": "Sent", "Metadata": message.get("Metadata", {}), "MessageStream": "outbound"}
            for message_id, message in reversed(self.sent)
            if all(message.get("Metadata", {}).get(key) == value for key, value in wanted.items())]
        count, offset = int(request.args["count"]), int(request.args["offset"])
        return _json(200, {"TotalCount": len(found), "Messages": found[offset:offset + count]})


def _json(status: int, body: dict) -> Response:
    return Response(json.dumps(body), status=status, content_type="application/json")
