"""A loopback OAuth 2.0 authorization server, as X documents its flow (and Threads its own refresh endpoint).

It speaks RFC 6749 with PKCE (RFC 7636): ``/i/oauth2/authorize`` is where a browser would go
(:meth:`FakeAuthorizationServer.approve` plays the person who approves), ``/2/oauth2/token`` takes
the ``authorization_code`` grant (the client authenticated by HTTP Basic, the ``redirect_uri``
the authorization named, the ``code_verifier`` whose S256 is the challenge) and the
``refresh_token`` grant (refresh tokens single-use, as X's are: a second use is
``invalid_grant``); ``/2/users/me`` answers the account as X does; ``/refresh_access_token``
is Threads' and Instagram's GET renewal. It records every request, so a test asserts on the
exact token request, and can hold a refresh answer until told (``hold_refresh``).
"""

import base64
import hashlib
import io
import json
import secrets
import threading
import types
from urllib.parse import parse_qs, urlsplit

from werkzeug import Request, Response

from models.channels.providers.base import SendOutcome, SendResult
from models.channels.providers.oauth import REFRESH_GRANT, OAuthSpec

CLIENT_ID, CLIENT_SECRET = "tickwork-test-client", "tickwork-test-secret"


def _avatar_png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (200, 200), (20, 120, 200)).save(out, format="PNG")
    return out.getvalue()


class FakeAuthorizationServer:
    def __init__(self, server, *, expires_in: int = 7200):
        self.server = server
        self.expires_in = expires_in
        self.codes: dict[str, dict] = {}  # code -> the authorization it answers
        self.refresh_tokens: dict[str, bool] = {}  # refresh token -> still unused
        self.access_tokens: set[str] = set()
        self.token_requests: list[dict] = []  # the form of every token request, with its Authorization header
        self.refresh_requests: list[dict] = []
        self.refuse_refresh: str | None = None  # an OAuth error code to answer every refresh with
        self.hold_refresh: threading.Event | None = None
        self.refresh_arrived = threading.Event()
        self.account = {"id": "2244994945", "name": "Acme Bakery", "username": "acmebakery",
                        "profile_image_url": server.url_for("/avatar.png")}
        server.expect_request("/2/oauth2/token", method="POST").respond_with_handler(self._token)
        server.expect_request("/2/users/me", method="GET").respond_with_handler(self._me)
        server.expect_request("/refresh_access_token", method="GET").respond_with_handler(self._meta_refresh)
        server.expect_request("/avatar.png", method="GET").respond_with_data(_avatar_png(), content_type="image/png")
        server.expect_request("/2/tweets", method="POST").respond_with_handler(self._tweet)
        server.expect_request("/access_token", method="GET").respond_with_handler(self._meta_exchange)
        server.expect_request("/i/oauth2/authorize/approve", method="GET").respond_with_handler(self._approved)
        server.expect_request("/i/oauth2/authorize", method="GET").respond_with_handler(self._consent)
        self.exchange_requests: list[dict] = []

    def url(self, path: str) -> str:
        return self.server.url_for(path)

    def spec(self, *, refresh: str = REFRESH_GRANT, **overrides) -> OAuthSpec:
        values = dict(authorize_url=self.url("/i/oauth2/authorize"), token_url=self.url("/2/oauth2/token"),
                      scopes=("tweet.write", "users.read", "offline.access"), refresh=refresh,
                      profile_path="/2/users/me", api_url=self.url("/").rstrip("/"), network="X")
        values.update(overrides)
        return OAuthSpec(**values)

    def provider(self, kind: str = "x", **spec) -> types.SimpleNamespace:
        """A provider module of ``kind`` connected through this server (posting to its ``/2/tweets``)."""
        fake = self

        def send(delivery, context):
            answer = context.http.post(fake.url("/2/tweets"), json={"text": delivery.payload.get("body", "")},
                                       headers={"Authorization": f"Bearer {delivery.secret}"}, timeout=context.timeout)
            if answer.status_code == 401:
                return SendResult(SendOutcome.PERMANENT, "X refused the token (401): reconnect the channel",
                                  reconnect_needed=True)
            return SendResult.success(answer.json()["data"]["id"])

        return types.SimpleNamespace(kind=kind, honours_idempotency_key=False, send=send, oauth=self.spec(**spec))

    # -- the person at the network ------------------------------------------------------------

    def approve(self, authorize_url: str) -> tuple[str, str]:
        """Play the person approving at the authorization page: the code and state the browser is sent back with."""
        query = {key: values[0] for key, values in parse_qs(urlsplit(authorize_url).query).items()}
        code = secrets.token_urlsafe(16)
        self.codes[code] = query
        return code, query["state"]

    # -- the authorization page a browser sees -----------------------------------------------

    def _consent(self, request: Request) -> Response:
        """The network's consent page: the app's name and an "Authorize app" button carrying the request on."""
        from html import escape

        query = request.args.to_dict()
        if query.get("client_id") != CLIENT_ID or query.get("response_type") != "code" or not query.get("state"):
            return Response("<h1>Something went wrong</h1>", status=400, content_type="text/html")
        hidden = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in query.items())
        return Response(f"<!doctype html><title>Authorize</title><h1>Authorize Tickwork to use your account?</h1>"
                        f'<form method="get" action="/i/oauth2/authorize/approve">{hidden}'
                        f'<button type="submit">Authorize app</button></form>', content_type="text/html")

    def _approved(self, request: Request) -> Response:
        """The person pressed "Authorize app": back to the redirect URI with a code and the state."""
        from urllib.parse import urlencode

        query = request.args.to_dict()
        code = secrets.token_urlsafe(16)
        self.codes[code] = query
        return Response(status=302, headers={"Location": f"{query['redirect_uri']}?"
                                                         + urlencode({"state": query["state"], "code": code})})

    # -- the endpoints ------------------------------------------------------------------------

    def _issue(self) -> dict:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access_tokens.add(access)
        self.refresh_tokens[refresh] = True
        return {"token_type": "bearer", "expires_in": self.expires_in, "access_token": access,
                "refresh_token": refresh, "scope": "tweet.write users.read offline.access"}

    @staticmethod
    def _error(error: str, description: str, status: int = 400) -> Response:
        return Response(json.dumps({"error": error, "error_description": description}), status=status,
                        content_type="application/json")

    def _client_ok(self, request: Request) -> bool:
        expected = "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        return request.headers.get("Authorization") == expected

    def _token(self, request: Request) -> Response:
        form = request.form.to_dict()
        record = {**form, "authorization": request.headers.get("Authorization"),
                  "content_type": request.headers.get("Content-Type", "")}
        if not self._client_ok(request):
            self.token_requests.append(record)
            return self._error("invalid_client", "Missing valid authorization header", 401)
        if form.get("grant_type") == "refresh_token":
            self.refresh_requests.append(record)
            self.refresh_arrived.set()
            if self.hold_refresh is not None:
                self.hold_refresh.wait(10)
            if self.refuse_refresh:
                return self._error(self.refuse_refresh, "Value passed for the token was invalid.")
            if not self.refresh_tokens.get(form.get("refresh_token", "")):
                return self._error("invalid_grant", "Value passed for the token was invalid.")
            self.refresh_tokens[form["refresh_token"]] = False  # single-use
            return Response(json.dumps(self._issue()), content_type="application/json")
        self.token_requests.append(record)
        if form.get("grant_type") != "authorization_code":
            return self._error("unsupported_grant_type", "grant_type")
        asked = self.codes.pop(form.get("code", ""), None)  # a code answers once
        if asked is None:
            return self._error("invalid_request", "Value passed for the authorization code was invalid.")
        if form.get("redirect_uri") != asked.get("redirect_uri"):
            return self._error("invalid_request", "redirect_uri does not match")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(form.get("code_verifier", "").encode()).digest())
        if asked.get("code_challenge_method") != "S256" or challenge.rstrip(b"=").decode() != asked.get("code_challenge"):
            return self._error("invalid_request", "Value passed for the code verifier did not match")
        return Response(json.dumps(self._issue()), content_type="application/json")

    def _bearer(self, request: Request) -> str | None:
        header = request.headers.get("Authorization", "")
        return header[7:] if header.startswith("Bearer ") else None

    def _me(self, request: Request) -> Response:
        if self._bearer(request) not in self.access_tokens:
            return Response(json.dumps({"title": "Unauthorized", "status": 401}), status=401,
                            content_type="application/json")
        return Response(json.dumps({"data": self.account}), content_type="application/json")

    def _tweet(self, request: Request) -> Response:
        if self._bearer(request) not in self.access_tokens:
            return Response(json.dumps({"title": "Unauthorized", "status": 401}), status=401,
                            content_type="application/json")
        return Response(json.dumps({"data": {"id": "1445880548472328192", "text": request.json["text"]}}),
                        status=201, content_type="application/json")

    def _meta_refresh(self, request: Request) -> Response:
        self.refresh_requests.append(request.args.to_dict())
        if self.refuse_refresh or request.args.get("access_token") not in self.access_tokens:
            return Response(json.dumps({"error": {"message": "Error validating access token", "type": "OAuthException",
                                                  "code": 190}}), status=400, content_type="application/json")
        access = secrets.token_urlsafe(24)
        self.access_tokens.add(access)
        return Response(json.dumps({"access_token": access, "token_type": "bearer", "expires_in": 5183944}),
                        content_type="application/json")

    def _meta_exchange(self, request: Request) -> Response:
        """Threads' GET /access_token?grant_type=th_exchange_token: a short-lived token for a 60-day one."""
        self.exchange_requests.append(request.args.to_dict())
        if request.args.get("client_secret") != CLIENT_SECRET or request.args.get("access_token") not in self.access_tokens:
            return Response(json.dumps({"error": {"message": "Invalid OAuth access token", "code": 190}}), status=400,
                            content_type="application/json")
        access = secrets.token_urlsafe(24)
        self.access_tokens.add(access)
        return Response(json.dumps({"access_token": access, "token_type": "bearer", "expires_in": 5183944}),
                        content_type="application/json")

    def revoke_all(self) -> None:
        """The person revoked the app at the network: every token stops working."""
        self.access_tokens.clear()
        self.refresh_tokens = {token: False for token in self.refresh_tokens}
