"""Rate limits (Flask-Limiter): failed sign-ins per account and per address, API calls per token.

The counts live in the storage ``TICKWORK_RATELIMIT_STORAGE_URI`` names: ``memory://`` on a
single box (each web process counts for itself), ``redis://...`` where several processes or
hosts must share them. A refused request answers 429 with ``Retry-After``: a page for people,
the JSON error shape for the API. Each app gets a limiter of its own, built after its
blueprints are registered, so every API blueprint (a wing's included) is limited per token.
"""

import hashlib

from flask import Flask, current_app, request
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

SIGNIN_REFUSED = "Too many failed sign-ins; wait a few minutes and try again."
API_REFUSED = "Too many requests with this token; slow down and retry after the time in Retry-After."
FEED_REFUSED = "Too many fetches of this calendar feed; retry after the time in Retry-After."


def _signin_account() -> str:
    """The account a sign-in attempt names, so guessing one person's password is slowed wherever it comes from."""
    return "signin:" + (request.form.get("email") or "").strip().lower()[:254]


def _signin_address() -> str:
    return "signin-from:" + get_remote_address()


def _failed(response) -> bool:
    return response.status_code == 401


def _token() -> str:
    """The bearer token, hashed: the raw token is never kept, not even as a counter's key.

    A request without one (a public pipeline callback, or a client that forgot it) counts
    against its address, so callers without a token do not share one bucket.
    """
    given = request.headers.get("Authorization", "")
    if not given:
        return "token-less:" + get_remote_address()
    return "token:" + hashlib.sha256(given.encode("utf-8", "replace")).hexdigest()


def _feed_token() -> str:
    """The calendar feed's token (hashed), so each feed address has its own allowance."""
    token = (request.view_args or {}).get("token") or ""
    return "feed:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def init_app(app: Flask) -> None:
    """Build the app's limiter and put the limits on sign-in and on every ``/api/`` blueprint."""
    limiter = Limiter(key_func=get_remote_address, headers_enabled=True, retry_after="delta-seconds",
                      storage_uri=app.config["TICKWORK_RATELIMIT_STORAGE_URI"],
                      key_prefix=app.config.get("RATELIMIT_KEY_PREFIX", ""))
    limiter.init_app(app)
    app.extensions["tickwork_limiter"] = limiter
    per_account = limiter.limit(lambda: current_app.config["TICKWORK_SIGNIN_LIMIT_PER_ACCOUNT"],
                                key_func=_signin_account, methods=["POST"], deduct_when=_failed,
                                error_message=SIGNIN_REFUSED)
    per_address = limiter.limit(lambda: current_app.config["TICKWORK_SIGNIN_LIMIT_PER_ADDRESS"],
                                key_func=_signin_address, methods=["POST"], deduct_when=_failed,
                                error_message=SIGNIN_REFUSED)
    app.view_functions["pages.login"] = per_account(per_address(app.view_functions["pages.login"]))
    # One count per token across every API route and blueprint (a plain limit would count each route apart).
    per_token = limiter.shared_limit(lambda: current_app.config["TICKWORK_API_RATE_LIMIT"], scope="api",
                                     key_func=_token, error_message=API_REFUSED)
    for blueprint in app.blueprints.values():
        if (blueprint.url_prefix or "").startswith("/api/"):
            per_token(blueprint)
    # Each calendar feed address is limited on its own (a calendar app polls every few minutes).
    per_feed = limiter.limit(lambda: current_app.config["TICKWORK_FEED_RATE_LIMIT"], key_func=_feed_token,
                             error_message=FEED_REFUSED)
    app.view_functions["feeds.feed"] = per_feed(app.view_functions["feeds.feed"])
