"""How a provider that is connected with OAuth 2.0 says so: its endpoints, scopes and refresh rule.

A provider module that sets ``oauth = OAuthSpec(...)`` is an OAuth kind: its channels are
connected from the dashboard (the Connect button), not given a secret by hand, and the
access token the connection yields is the channel's secret (``Delivery.secret``), so
``send`` is the same for a token typed in and one obtained by connecting. The refresh token
and the token's expiry are kept beside it by the connecting code; a provider never sees them.

The self-hoster registers their own app with the network; its client id and secret come from
the settings ``TICKWORK_OAUTH_<KIND>_CLIENT_ID`` and ``TICKWORK_OAUTH_<KIND>_CLIENT_SECRET``,
and the network sends the person back to ``TICKWORK_BASE_URL/oauth/callback/<kind>``.
:mod:`models.channels.connections` runs the flow (Authlib, through the egress policy); a
provider only declares it here. A provider may also offer ``read_account(body) -> dict``
(``id``, ``name``, ``username``, ``avatar_url``) when its profile answer is shaped unlike
the common ones :func:`account_from` reads, and ``finish_connect(answer, *, http, client_id,
client_secret, config, token_url, api_url) -> dict`` to turn the code's token answer into the one to
keep (Meta's short-lived token exchanged for a long-lived one, a Facebook Page's own token), calling
out with ``http`` (an egress client) only; ``token_url`` and ``api_url`` are the token endpoint and
API base the connection uses (the channel's settings, else the spec's).
"""

from dataclasses import dataclass

from models.core.errors import DomainError

# How a connection's access token is renewed before it expires.
REFRESH_GRANT = "refresh_token"  # the standard refresh grant at the token endpoint (X, Facebook's long-lived exchange)
THREADS_REFRESH = "th_refresh_token"  # Threads' own GET /refresh_access_token?grant_type=th_refresh_token
INSTAGRAM_REFRESH = "ig_refresh_token"  # Instagram's own GET /refresh_access_token?grant_type=ig_refresh_token
NO_REFRESH = "none"  # no programmatic refresh (LinkedIn for most apps): reconnect needed some days before expiry


@dataclass(frozen=True)
class OAuthSpec:
    authorize_url: str  # the network's authorization endpoint (a person's browser goes there)
    token_url: str  # the token endpoint (Tickwork calls it, through the egress policy)
    scopes: tuple[str, ...]
    refresh: str = REFRESH_GRANT
    pkce: bool = True  # S256 challenge on every authorization request
    # Where the connected account's name and avatar are read once connected (relative to the
    # channel's ``url``, else ``api_url``, else the token endpoint's origin), or None when the token
    # answer carries them.
    profile_path: str | None = None
    # Config keys (other than ``url``) the authorization endpoints take from the channel config
    # when a network lets a self-hoster point at another host, e.g. a test's loopback fake.
    authorize_url_key: str = "authorize_url"
    token_url_key: str = "token_url"
    # The network's name as people know it ("LinkedIn"), for messages such as "reconnect the LinkedIn channel".
    network: str = ""
    # The API base the profile path and the network's own refresh endpoint are under when the channel's
    # config has no ``url`` (a provider's default, e.g. https://graph.threads.net).
    api_url: str | None = None
    # Threads' and Instagram's own refresh endpoint; default ``<api base>/refresh_access_token``.
    refresh_url: str | None = None
    refresh_url_key: str = "refresh_url"
    # How the app proves itself at the token endpoint: HTTP Basic (X) or in the form (LinkedIn, Meta).
    token_endpoint_auth_method: str = "client_secret_basic"
    scope_separator: str = " "  # Meta's networks join scopes with ","

    def __post_init__(self):
        if self.refresh not in REFRESH_RULES:
            raise ValueError(f"unknown refresh rule {self.refresh!r}; one of {', '.join(REFRESH_RULES)}")


REFRESH_RULES = (REFRESH_GRANT, THREADS_REFRESH, INSTAGRAM_REFRESH, NO_REFRESH)
NETWORK_NAMES = {"x": "X", "linkedin": "LinkedIn", "threads": "Threads", "facebook": "Facebook",
                 "instagram": "Instagram"}


def network_name(kind: str, spec: "OAuthSpec | None" = None) -> str:
    """The network's name for people: the spec's, else the known one, else the kind."""
    return (spec.network if spec is not None and spec.network else None) or NETWORK_NAMES.get(kind, kind)


_NAME_KEYS = ("name", "username", "localizedFirstName", "email")
_AVATAR_KEYS = ("profile_image_url", "picture", "threads_profile_picture_url", "profile_picture_url", "avatar_url")
_ID_KEYS = ("id", "sub", "user_id")


def account_from(body) -> dict | None:
    """The account a profile (or token) answer names, as ``{id, name, username, avatar_url}``; None if it names none.

    Reads the shapes the networks answer with: X's ``{"data": {...}}``, OpenID's ``sub``/``picture``
    (LinkedIn), Meta's ``username`` and ``picture.data.url``.
    """
    if not isinstance(body, dict):
        return None
    if isinstance(body.get("data"), dict):
        body = body["data"]

    def first(keys):
        for key in keys:
            value = body.get(key)
            if isinstance(value, dict):  # Meta: {"picture": {"data": {"url": ...}}}
                value = (value.get("data") or {}).get("url") if isinstance(value.get("data"), dict) else value.get("url")
            if isinstance(value, (str, int)) and str(value).strip():
                return str(value).strip()[:500]
        return None

    account = {"id": first(_ID_KEYS), "name": first(_NAME_KEYS), "username": first(("username", "screen_name")),
               "avatar_url": first(_AVATAR_KEYS)}
    if account["avatar_url"] and not account["avatar_url"].startswith(("https://", "http://")):
        account["avatar_url"] = None
    return account if account["name"] or account["id"] else None


class ConnectionFailed(DomainError):
    """The network would not complete the connection (the exchange or the profile failed)."""

    status = 502
    code = "connection_failed"
