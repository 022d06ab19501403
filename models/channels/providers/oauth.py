"""How a provider that is connected with OAuth 2.0 says so: its endpoints, scopes and refresh rule.

A provider module that sets ``oauth = OAuthSpec(...)`` is an OAuth kind: its channels are
connected from the dashboard (the Connect button), not given a secret by hand, and the
access token the connection yields is the channel's secret (``Delivery.secret``), so
``send`` is the same for a token typed in and one obtained by connecting. The refresh token
and the token's expiry are kept beside it by the connecting code; a provider never sees them.

The self-hoster registers their own app with the network; its client id and secret come from
the settings ``TICKWORK_OAUTH_<KIND>_CLIENT_ID`` and ``TICKWORK_OAUTH_<KIND>_CLIENT_SECRET``.
"""

from dataclasses import dataclass

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
    # channel's ``url``), or None when the token answer carries them.
    profile_path: str | None = None
    # Config keys (other than ``url``) the authorization endpoints take from the channel config
    # when a network lets a self-hoster point at another host, e.g. a test's loopback fake.
    authorize_url_key: str = "authorize_url"
    token_url_key: str = "token_url"
