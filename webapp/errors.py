"""Error answers: JSON under /api, a calm page elsewhere, never a stack trace."""

from flask import Flask, jsonify, render_template, request
from flask_wtf.csrf import CSRFError
from werkzeug.exceptions import HTTPException

from models.errors import DomainError


def error_body(code: str, message: str, field: str | None = None, **extra) -> dict:
    body = {"code": code, "message": message}
    if field:
        body["field"] = field
    body.update({k: v for k, v in extra.items() if v is not None})
    return {"error": body}


def wants_json() -> bool:
    return request.path.startswith("/api/") or request.path in ("/healthz",)


def init_app(app: Flask) -> None:
    @app.errorhandler(DomainError)
    def _domain_error(exc: DomainError):
        if wants_json():
            return jsonify(error_body(exc.code, exc.message, exc.field, **exc.detail)), exc.status
        return render_template("error.html", status=exc.status, message=exc.message), exc.status

    @app.errorhandler(CSRFError)
    def _csrf_error(exc: CSRFError):
        message = "This form has expired or was not sent from Tickwork; reload the page and try again."
        if wants_json():
            return jsonify(error_body("csrf", message)), 400
        return render_template("error.html", status=400, message=message), 400

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException):
        if wants_json():
            return jsonify(error_body(exc.name.lower().replace(" ", "_"), exc.description)), exc.code
        return render_template("error.html", status=exc.code, message=exc.description), exc.code

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception):
        app.logger.exception("unhandled error on %s %s", request.method, request.path)
        message = "Something went wrong on our side; it has been logged."
        if wants_json():
            return jsonify(error_body("internal", message)), 500
        return render_template("error.html", status=500, message=message), 500
