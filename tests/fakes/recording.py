"""What every fake records of a request, read once from werkzeug's request."""

import json
from dataclasses import dataclass, field

from werkzeug import Request, Response


@dataclass
class Received:
    """One request as the fake saw it: its method, path, query, headers and body, parsed by its content type."""

    method: str
    path: str
    query: dict
    headers: dict
    body: bytes = b""
    json: object = None
    form: dict = field(default_factory=dict)
    # Multipart files by field name: (filename, content type, bytes).
    files: dict = field(default_factory=dict)

    @classmethod
    def of(cls, request: Request) -> "Received":
        received = cls(request.method, request.path, request.args.to_dict(), dict(request.headers))
        if request.mimetype in ("multipart/form-data", "application/x-www-form-urlencoded"):
            form = request.form.to_dict(flat=False)
            received.form = {key: values[0] if len(values) == 1 else values for key, values in form.items()}
            received.files = {name: (item.filename, item.mimetype, item.read()) for name, item in request.files.items()}
            return received
        received.body = request.get_data()
        if request.mimetype == "application/json":
            received.json = json.loads(received.body or b"null")
        return received


def json_response(body, status: int = 200, headers: dict | None = None) -> Response:
    return Response(json.dumps(body), status=status, headers=headers or {}, content_type="application/json")
