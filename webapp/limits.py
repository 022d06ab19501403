"""Rate limits (Flask-Limiter): failed sign-ins per account and per address, API calls per token id
(or per address for requests without a valid token), each calendar feed, and the outside reviewers'
public page per review link and per address.

The counts live in the storage ``TICKWORK_RATELIMIT_STORAGE_URI`` names: ``memory://`` on a
single box (each web process counts for itself), ``redis://...`` where several processes or
hosts must share them. A refused request answers 429 with ``Retry-After``: a page for people,
the JSON error shape for the API. Each app gets a limiter of its own, built after its
blueprints are registered, so every API blueprint (a wing's included) is limited per token.
"""

import hashlib
import secrets

from flask import Flask, current_app, request
from itsdangerous import BadData, URLSafeTimedSerializer
from flask_limiter import Limiter
from flask_limiter.util import get_remote_address

SIGNIN_REFUSED = "Too many failed sign-ins; wait a few minutes and try again."
API_REFUSED = "Too many requests with this token; slow down and retry after the time in Retry-After."
FEED_REFUSED = "Too many fetches of this calendar feed; retry after the time in Retry-After."
REVIEW_REFUSED = ("Too many requests for this review link; wait a minute, then reload the page. Nothing was "
                  "decided by the request that was refused.")
REVIEW_ENDPOINTS = ("post_review_public.page", "post_review_public.decide")


DEVICE_COOKIE = "tickwork_device"
DEVICE_DAYS = 180
MAX_DEVICE_ACCOUNTS = 10


def _device_signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt="tickwork-device")


def _account_hash(email: str) -> str:
    return hashlib.sha256(email.encode("utf-8", "replace")).hexdigest()[:32]


def _device() -> dict | None:
    """This browser's device cookie (signed, at most DEVICE_DAYS old), or None."""
    raw = request.cookies.get(DEVICE_COOKIE)
    if not raw or len(raw) > 4096:
        return None
    try:
        found = _device_signer().loads(raw, max_age=DEVICE_DAYS * 86400)
    except BadData:
        return None
    ok = isinstance(found, dict) and isinstance(found.get("d"), str) and isinstance(found.get("a"), list)
    return found if ok else None


def remember_device(response, email: str) -> None:
    """After a successful sign-in: this browser has signed in to ``email``'s account, so strangers' failures
    for that account never lock it out (it keeps a budget of its own; the per-address limit still holds)."""
    device = _device() or {"d": secrets.token_urlsafe(16), "a": []}
    accounts = [a for a in device["a"] if a != _account_hash(email)][-(MAX_DEVICE_ACCOUNTS - 1):]
    device["a"] = [*accounts, _account_hash(email)]
    response.set_cookie(DEVICE_COOKIE, _device_signer().dumps(device), max_age=DEVICE_DAYS * 86400, httponly=True,
                        samesite="Lax", secure=current_app.config.get("SESSION_COOKIE_SECURE", False))


def _signin_account() -> str:
    """The account a sign-in attempt names, so guessing one person's password is slowed wherever it comes from.

    A browser that has signed in to that account before (its device cookie says so) counts apart:
    someone else's wrong passwords lock out the strangers' bucket, never the person's own browser.
    """
    email = (request.form.get("email") or "").strip().lower()[:254]
    device = _device()
    if device is not None and _account_hash(email) in device["a"]:
        return f"signin:{email}:device:{device['d']}"
    return "signin:" + email


def _signin_address() -> str:
    return "signin-from:" + get_remote_address()


def _two_factor_account() -> str:
    """The account whose second factor is being tried (from this browser's pending sign-in)."""
    from flask import session

    pending = session.get("two_factor")
    return f"two-factor:{pending.get('u') if isinstance(pending, dict) else None}"


def _failed(response) -> bool:
    return response.status_code == 401


def _token() -> str:
    """The counter an API request spends: its token's id, once the header is parsed as RFC 9110 says
    (the scheme in any case, any spacing), so writing the same token another way buys no fresh budget.

    A request without a valid token (none at all, a public pipeline callback, a revoked, expired
    or made-up one) counts against its address: guessing tokens is limited like anything else,
    and callers without a token do not share one bucket.
    """
    from webapp.auth import bearer_token

    token = bearer_token()
    if token is None:
        return "address:" + get_remote_address()
    return f"token:{token.id}"


def _feed_token() -> str:
    """The calendar feed's token (hashed), so each feed address has its own allowance."""
    token = (request.view_args or {}).get("token") or ""
    return "feed:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def _review_link() -> str:
    """The review link's token (hashed), so each link has its own allowance, its page and its decisions together."""
    token = (request.view_args or {}).get("token") or ""
    return "review-link:" + hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def _review_address() -> str:
    return "review-from:" + get_remote_address()


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
    # Guessing a second factor is slowed like guessing a password: per account, and per address.
    per_account_code = limiter.limit(lambda: current_app.config["TICKWORK_SIGNIN_LIMIT_PER_ACCOUNT"],
                                     key_func=_two_factor_account, methods=["POST"], deduct_when=_failed,
                                     error_message=SIGNIN_REFUSED)
    app.view_functions["pages.two_factor"] = per_account_code(per_address(app.view_functions["pages.two_factor"]))
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
    # A review link is a page anyone holding it may open without an account: each link, and each address across
    # links (made-up ones too), has an allowance; the page and the decision share it.
    per_link = limiter.shared_limit(lambda: current_app.config["TICKWORK_REVIEW_LINK_RATE_LIMIT"],
                                    scope="review-link", key_func=_review_link, error_message=REVIEW_REFUSED)
    per_reviewer_address = limiter.shared_limit(lambda: current_app.config["TICKWORK_REVIEW_ADDRESS_RATE_LIMIT"],
                                                scope="review-from", key_func=_review_address,
                                                error_message=REVIEW_REFUSED)
    for endpoint in REVIEW_ENDPOINTS:
        app.view_functions[endpoint] = per_link(per_reviewer_address(app.view_functions[endpoint]))
