"""Error answers: JSON under /api, a calm page elsewhere, never a stack trace."""

from flask import Flask, jsonify, make_response, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from models.core.errors import DomainError
from models.core.json_input import check_text


TOO_LARGE = ("That request is too large: a form or a JSON body takes at most 2 MiB, a field of a form at most "
             "500 KB, and a CSV file 20 MiB.")


def error_body(code: str, message: str, field: str | None = None, **extra) -> dict:
    body = {"code": code, "message": message}
    if field:
        body["field"] = field
    body.update({k: v for k, v in extra.items() if v is not None})
    return {"error": body}


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.path in ("/healthz",)


def page_or_message(status: int, message: str):
    """A calm error page; for htmx, a message retargeted to the page's message area.

    htmx 4 swaps error answers into the request's target like any other, so a page meant
    for the whole window would land inside a table row. HX-Retarget sends it to the one
    place messages go instead (see docs/dashboard.md).
    """
    if request.headers.get("HX-Request") == "true":
        response = make_response(render_template("_message.html", message=message, kind="error"), status)
        response.headers["HX-Retarget"] = "#messages"
        response.headers["HX-Reswap"] = "innerHTML"
        return response
    return render_template("error.html", status=status, message=message), status


def refuse_nul_characters() -> None:
    """No query string or form value may hold a NUL character: PostgreSQL can neither store nor compare
    one, so it would fail deep in a query; refused here, for every route, naming the field, by the
    check JSON values go through."""
    for source in (request.args, request.form):
        for name, value in source.items(multi=True):
            name = name or ""  # a multipart part whose name the parser could not read
            field = name.replace("\x00", "")[:40] or "a field"
            check_text(name, field=field)
            check_text(value, field=field)


def init_app(app: Flask) -> None:
    app.before_request(refuse_nul_characters)

    @app.errorhandler(DomainError)
    def _domain_error(exc: DomainError):
        if wants_json():
            return jsonify(error_body(exc.code, exc.message, exc.field, **exc.detail)), exc.status
        return page_or_message(exc.status, exc.message)

    @app.errorhandler(CSRFError)
    def _csrf_error(exc: CSRFError):
        message = "This form has expired or was not sent from Tickwork; reload the page and try again."
        if wants_json():
            return jsonify(error_body("csrf", message)), 400
        return page_or_message(400, message)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        description = TOO_LARGE if exc.code == 413 else exc.description
        if wants_json():
            return jsonify(error_body(exc.name.lower().replace(" ", "_"), description)), exc.code
        return page_or_message(exc.code, description)

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        app.logger.exception("unhandled error on %s %s", request.method, request.path)
        message = "Something went wrong on our side; it has been logged."
        if wants_json():
            return jsonify(error_body("internal", message)), 500
        return page_or_message(500, message)
