"""Connected accounts: connecting an OAuth kind's channel, renewing its token, and "reconnect needed".

The flow, for a provider that declares ``oauth = OAuthSpec(...)`` (:mod:`.providers.oauth`)::

    Connect (an admin)            the network                    callback (public route)
    start_authorization ──────▶  the person approves  ──────▶  take_authorization (state: one use,
      state + PKCE S256,           redirect to                    10 minutes, the same person)
      kept server-side             BASE_URL/oauth/callback/KIND   exchange_code (code + verifier)
                                                                   read_account, store_connection

The access token becomes the channel's secret (so ``send`` reads ``Delivery.secret`` as for a
token typed in); the refresh token and the expiry are sealed and kept beside it. Every call to
the network goes through Authlib's httpx client on the egress transport, so through the egress
policy. Tokens never appear in the database unsealed, in a log line or in an event.

Renewal (:func:`refresh_connections`, the ``refresh-tokens`` clock job) follows the provider's
rule: the standard refresh grant, Threads' and Instagram's own endpoints, or none (LinkedIn
for most apps: the channel shows it expires and an alert fires :data:`WARN_AHEAD` before; at
expiry it needs reconnecting). One refresher per channel at a time: a lease taken by a
compare-and-set (``refresh_lease_until``/``refresh_lease_token``) before the call, and the new
tokens sealed by the transaction that gives the lease back, guarded by it, so two refreshers
never spend one single-use refresh token (X) twice.

A refresh the network refuses, or a send it refuses as an expired or revoked token, puts
the channel in **reconnect needed** (:func:`mark_reconnect_needed`): the dispatch then fails
its due rows as ``reconnect_needed`` without claiming them. A successful Connect clears it.
"""

import base64
import hashlib
import json
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import httpx
from authlib.common.security import generate_token
from authlib.integrations.base_client.errors import OAuthError
from authlib.integrations.httpx_client import OAuth2Client
from sqlalchemy import bindparam, delete, or_, select, update
from sqlalchemy.orm import Session

from models.channels.providers import PROVIDERS
from models.channels.providers.oauth import (INSTAGRAM_REFRESH, NO_REFRESH, REFRESH_GRANT, THREADS_REFRESH,
                                             ConnectionFailed, OAuthSpec, account_from, network_name)
from models.channels.tables import Channel, ChannelEvent, OAuthAuthorization
from models.core.egress import current_policy, egress_client, egress_transport, literal_address, shown_text
from models.core.errors import DomainError, InvalidInput
from models.core.moves import Actor
from models.core.secrets_box import SecretBox, SecretUnreadable
from models.core.types import UTCDateTime

AUTHORIZATION_TTL = timedelta(minutes=10)
# How long before expiry a token is renewed, by rule (at most half the token's life, so a short-lived
# token is not renewed on every pass); a token with no refresh is announced this far ahead.
REFRESH_AHEAD = {REFRESH_GRANT: timedelta(minutes=30), THREADS_REFRESH: timedelta(days=7),
                 INSTAGRAM_REFRESH: timedelta(days=7)}
WARN_AHEAD = timedelta(days=7)
# A refresher holds the channel this long at most (its calls time out well before).
LEASE = timedelta(minutes=2)
# Answered authorizations are forgotten after this (expired ones are never answered).
FORGET_AFTER = timedelta(days=1)


class AuthorizationRefused(DomainError):
    """A callback that does not answer an authorization Tickwork has in flight for this person; nothing changed."""

    status = 400
    code = "authorization_refused"


# -- what a kind declares, and what the operator configured ------------------------------------


def oauth_spec(kind: str) -> OAuthSpec | None:
    """The OAuth declaration of ``kind``'s provider, or None for a kind connected by a secret."""
    spec = getattr(PROVIDERS.get(kind), "oauth", None)
    return spec if isinstance(spec, OAuthSpec) else None


def oauth_kinds() -> list[str]:
    return [kind for kind in PROVIDERS if oauth_spec(kind) is not None]


def setting_names(kind: str) -> tuple[str, str]:
    """The settings holding the app's client id and secret for ``kind``."""
    stem = "TICKWORK_OAUTH_" + kind.upper().replace("-", "_")
    return f"{stem}_CLIENT_ID", f"{stem}_CLIENT_SECRET"


@dataclass(frozen=True)
class OAuthApp:
    """The app the self-hoster registered with the network, and where it sends people back."""

    client_id: str
    client_secret: str = field(default="", repr=False)
    base_url: str | None = None

    def redirect_uri(self, kind: str) -> str:
        return f"{(self.base_url or '').rstrip('/')}/oauth/callback/{kind}"


def oauth_app(settings: Mapping, kind: str) -> OAuthApp | None:
    """The configured app for ``kind`` (its client id set), or None."""
    id_name, secret_name = setting_names(kind)
    client_id = (settings.get(id_name) or "").strip()
    if not client_id:
        return None
    return OAuthApp(client_id, (settings.get(secret_name) or "").strip(), settings.get("TICKWORK_BASE_URL"))


def setup_problem(settings: Mapping, kind: str) -> str | None:
    """Why ``kind``'s channels cannot be connected on this instance yet, in words for the channel page; None if they can."""
    spec = oauth_spec(kind)
    if spec is None:
        return None
    id_name, secret_name = setting_names(kind)
    if oauth_app(settings, kind) is None:
        return (f"To connect {network_name(kind, spec)} accounts, register an app with {network_name(kind, spec)} "
                f"and set {id_name} and {secret_name} (see docs/operations.md, Connecting accounts).")
    if not settings.get("TICKWORK_BASE_URL"):
        return ("Connecting accounts needs TICKWORK_BASE_URL: the network sends people back to "
                f"TICKWORK_BASE_URL/oauth/callback/{kind}.")
    return None


def _endpoint(config: Mapping, key: str, default: str | None) -> str | None:
    """A setting that points one of the network's endpoints elsewhere, if it may (see :func:`endpoint_refusal`)."""
    value = (config or {}).get(key)
    if not isinstance(value, str) or not value.strip():
        return default
    return value.strip() if endpoint_refusal(value.strip(), default) is None else default


def _host_of(url: str | None) -> str | None:
    try:
        return httpx.URL(url).host.lower() or None if url else None
    except (httpx.InvalidURL, TypeError):
        return None


def endpoint_refusal(url: str, default: str | None) -> str | None:
    """Why a channel setting may not point an OAuth endpoint at ``url``, or None.

    The app's client secret and the account's tokens go there, and the app is the operator's,
    not a workspace's: so a setting may name the network's own host, or a destination the
    operator opened with ``TICKWORK_EGRESS_ALLOW`` (a staging server, a test's loopback fake),
    and nothing else.
    """
    host = _host_of(url)
    if host is None or not url.startswith(("https://", "http://")):
        return "it is not an http(s) URL"
    if host == _host_of(default):
        return None
    policy = current_policy()
    if policy.allows_name(host):
        return None
    address = literal_address(host)
    if address is not None and any(address.version == net.version and address in net for net in policy.networks):
        return None
    return (f"it may name only the network's own host ({_host_of(default) or 'none'}) or a destination "
            "TICKWORK_EGRESS_ALLOW opens")


def check_endpoint_settings(kind: str, config: Mapping) -> None:
    """Refuse (at save) a setting pointing an OAuth kind's endpoints where its secrets must not go."""
    spec = oauth_spec(kind)
    if spec is None:
        return
    for key, default in ((spec.authorize_url_key, spec.authorize_url), (spec.token_url_key, spec.token_url),
                         (spec.refresh_url_key, spec.refresh_url or spec.token_url)):
        value = (config or {}).get(key)
        if value is None:
            continue
        why = endpoint_refusal(value, default) if isinstance(value, str) else "it is not a URL"
        if why is not None:
            raise InvalidInput(f"{key}: {why}.", field="settings", code="destination_not_allowed")


def api_base(spec: OAuthSpec, config: Mapping) -> str | None:
    """Where the profile path and a network's own refresh endpoint are: the channel's ``url``, else the spec's
    ``api_url``, else the origin of its token endpoint (X, Threads and Facebook serve both from there)."""
    found = _endpoint(config, "url", spec.api_url)
    if found:
        return found
    token_url = _endpoint(config, spec.token_url_key, spec.token_url)
    try:
        parts = httpx.URL(token_url)
    except (httpx.InvalidURL, TypeError):
        return None
    return f"{parts.scheme}://{parts.netloc.decode()}" if parts.scheme and parts.host else None


def authorize_origin(channel: Channel) -> str | None:
    """The origin (``https://host[:port]``) of the authorization page Connect sends a person to, or None."""
    spec = oauth_spec(channel.kind)
    if spec is None:
        return None
    try:
        url = httpx.URL(_endpoint(channel.config, spec.authorize_url_key, spec.authorize_url))
    except (httpx.InvalidURL, TypeError):
        return None
    if url.scheme not in ("https", "http") or not url.host:
        return None
    host = f"[{url.host}]" if ":" in url.host else url.host
    return f"{url.scheme}://{host}" + (f":{url.port}" if url.port else "")


def _scope(spec: OAuthSpec) -> str:
    return spec.scope_separator.join(spec.scopes)


def _client(spec: OAuthSpec, app: OAuthApp, *, timeout: float, redirect_uri: str | None = None) -> OAuth2Client:
    """Authlib's client for ``spec`` on the egress transport (no proxies from the environment, no redirects)."""
    extra = {"code_challenge_method": "S256"} if spec.pkce else {}
    return OAuth2Client(app.client_id, app.client_secret or None, scope=_scope(spec), redirect_uri=redirect_uri,
                        token_endpoint_auth_method=spec.token_endpoint_auth_method, transport=egress_transport(),
                        trust_env=False, timeout=timeout, follow_redirects=False, **extra)


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def pkce_challenge(verifier: str) -> str:
    """BASE64URL(SHA256(verifier)) without padding (RFC 7636 S256)."""
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


# -- connecting ---------------------------------------------------------------------------------


def start_authorization(session: Session, channel: Channel, *, user_id: int, app: OAuthApp, box: SecretBox,
                        now: datetime, timeout: float = 10.0) -> str:
    """Record an authorization request for ``channel`` by ``user_id`` and return the network's URL to send them to."""
    spec = oauth_spec(channel.kind)
    if spec is None:
        raise AuthorizationRefused(f"A {channel.kind} channel is not connected with an account.", field="kind")
    session.execute(delete(OAuthAuthorization).where(OAuthAuthorization.created_at < now - FORGET_AFTER))
    state = secrets.token_urlsafe(32)
    verifier = generate_token(64) if spec.pkce else None
    redirect_uri = app.redirect_uri(channel.kind)
    session.add(OAuthAuthorization(state_hash=_digest(state), kind=channel.kind, workspace_id=channel.workspace_id,
                                   user_id=user_id, channel_id=channel.id,
                                   verifier_sealed=box.seal(verifier) if verifier else None,
                                   redirect_uri=redirect_uri, created_at=now, expires_at=now + AUTHORIZATION_TTL))
    session.flush()
    with _client(spec, app, timeout=timeout, redirect_uri=redirect_uri) as client:
        url, _ = client.create_authorization_url(
            _endpoint(channel.config, spec.authorize_url_key, spec.authorize_url), state=state,
            **({"code_verifier": verifier} if verifier else {}))
    return url


# One use: the answer that flips used_at is the one that goes on to the exchange.
_a = OAuthAuthorization.__table__.c
_TAKE = (update(OAuthAuthorization.__table__)
         .where(_a.id == bindparam("authorization_id"), _a.used_at.is_(None),
                _a.expires_at > bindparam("now", type_=UTCDateTime()))
         .values(used_at=bindparam("now", type_=UTCDateTime()))
         .returning(_a.id))


NOT_OURS = ("This answer from the network does not match a connection Tickwork started, or it was already used. "
            "Nothing was changed: start again with Connect on the channel's page.")


def take_authorization(session: Session, kind: str, state: str | None, *, user_id: int | None,
                       now: datetime) -> OAuthAuthorization:
    """The authorization ``state`` answers, used up by this call; :class:`AuthorizationRefused` (nothing changed)
    for a state Tickwork did not issue, one already used or expired, one for another kind or another person."""
    if not isinstance(state, str) or not 16 <= len(state) <= 200:
        raise AuthorizationRefused(NOT_OURS, field="state")
    pending = session.scalar(select(OAuthAuthorization).where(OAuthAuthorization.state_hash == _digest(state)))
    if pending is None or pending.kind != kind or pending.used_at is not None:
        raise AuthorizationRefused(NOT_OURS, field="state")
    if pending.expires_at <= now:
        raise AuthorizationRefused("This connection request expired (they last ten minutes). Nothing was changed: "
                                   "start again with Connect on the channel's page.", field="state")
    if user_id is None or pending.user_id != user_id:
        raise AuthorizationRefused("This connection was started by someone else, or you are not signed in as the "
                                   "person who started it. Nothing was changed: sign in and start again with "
                                   "Connect on the channel's page.", field="state")
    if session.scalar(_TAKE, {"authorization_id": pending.id, "now": now}) is None:
        raise AuthorizationRefused(NOT_OURS, field="state")  # answered a moment ago in another request
    return pending


@dataclass(frozen=True)
class Tokens:
    """What a token endpoint answered, read: never logged, sealed when stored."""

    access_token: str
    refresh_token: str | None
    expires_at: datetime | None
    answer: dict

    def __repr__(self) -> str:
        return f"Tokens(expires_at={self.expires_at!r})"


def _tokens(answer: Mapping, now: datetime, *, keep_refresh: str | None = None) -> Tokens:
    access = answer.get("access_token")
    if not isinstance(access, str) or not access:
        raise ConnectionFailed("The network's token answer carried no access token.")
    expires_in = answer.get("expires_in")
    try:
        seconds = int(expires_in) if expires_in not in (None, "") else None
    except (TypeError, ValueError):
        seconds = None
    refresh = answer.get("refresh_token") if isinstance(answer.get("refresh_token"), str) else None
    safe = {key: value for key, value in dict(answer).items() if key not in ("access_token", "refresh_token",
                                                                            "id_token")}
    return Tokens(access, refresh or keep_refresh, now + timedelta(seconds=seconds) if seconds and seconds > 0 else None,
                  safe)


def _network_words(exc: Exception, what: str) -> str:
    if isinstance(exc, OAuthError):
        detail = f"{exc.error}" + (f": {exc.description}" if exc.description else "")
        return f"{what} refused: {shown_text(detail, 200)}"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"{what} answered {exc.response.status_code}"
    if isinstance(exc, httpx.TransportError):
        return f"{what} could not be reached: {shown_text(str(exc) or type(exc).__name__, 200)}"
    return f"{what} answered something that is not a token: {type(exc).__name__}"


def exchange_code(pending: OAuthAuthorization, code: str, *, channel_config: Mapping, app: OAuthApp, box: SecretBox,
                  now: datetime, timeout: float = 10.0) -> Tokens:
    """The token request: the code and the PKCE verifier for the redirect URI the request named."""
    spec = oauth_spec(pending.kind)
    if spec is None:
        raise ConnectionFailed(f"No provider connects {pending.kind} channels any more.")
    verifier = box.open(pending.verifier_sealed) if pending.verifier_sealed else None
    token_url = _endpoint(channel_config, spec.token_url_key, spec.token_url)
    try:
        with _client(spec, app, timeout=timeout, redirect_uri=pending.redirect_uri) as client:
            answer = client.fetch_token(token_url, grant_type="authorization_code", code=code,
                                        **({"code_verifier": verifier} if verifier else {}))
    except (OAuthError, httpx.HTTPError, ValueError) as exc:
        raise ConnectionFailed(_network_words(exc, f"{network_name(pending.kind, spec)}'s token endpoint")) from None
    answer = dict(answer)
    finish = getattr(PROVIDERS.get(pending.kind), "finish_connect", None)
    if finish is not None:
        # Meta's networks answer the code with a short-lived token, exchanged for a long-lived one here
        # (Threads' th_exchange_token, Instagram's ig_exchange_token, Facebook's fb_exchange_token and the
        # Page's own token): the provider knows how, with this egress client and the app's credentials.
        try:
            with egress_client(timeout=timeout, follow_redirects=False) as http:
                answer = finish(answer, http=http, client_id=app.client_id, client_secret=app.client_secret,
                                config=dict(channel_config or {}), token_url=token_url,
                                api_url=(api_base(spec, channel_config) or "").rstrip("/"))
        except (httpx.HTTPError, ValueError, KeyError) as exc:
            raise ConnectionFailed(_network_words(exc, f"{network_name(pending.kind, spec)}'s long-lived token "
                                                       "exchange")) from None
        if not isinstance(answer, Mapping):
            raise ConnectionFailed(f"{network_name(pending.kind, spec)}'s long-lived token exchange gave no token.")
    return _tokens(answer, now)


def read_account(kind: str, tokens: Tokens, channel_config: Mapping, *, timeout: float = 10.0) -> dict | None:
    """The connected account (``id``, ``name``, ``username``, ``avatar_url``): from the spec's profile path, else the
    token answer. A profile that cannot be read leaves the account unknown; it does not undo the connection."""
    spec = oauth_spec(kind)
    provider = PROVIDERS.get(kind)
    reader = getattr(provider, "read_account", None) or account_from
    body = tokens.answer
    base = api_base(spec, channel_config) if spec else None
    if spec is not None and spec.profile_path and base:
        try:
            with egress_client(timeout=timeout, follow_redirects=False) as client:
                answer = client.get(base.rstrip("/") + "/" + spec.profile_path.lstrip("/"),
                                    headers={"Authorization": f"Bearer {tokens.access_token}"})
            body = answer.json() if answer.is_success else None
        except (httpx.HTTPError, ValueError):
            body = None
    account = (reader(body) if body is not None else None) or reader(tokens.answer)
    if account and account.get("avatar_url"):
        account["avatar"] = avatar_data_url(account["avatar_url"], timeout=timeout)
    return account


AVATAR_BYTES = 512 * 1024
AVATAR_SIZE = (96, 96)


def avatar_data_url(url: str, *, timeout: float) -> str | None:
    """The avatar at ``url`` (fetched through the egress policy) as a small PNG ``data:`` URL, or None.

    Kept with the account rather than linked: the dashboard's pages load images from
    Tickwork itself only, and an image is shown only once Pillow has read it as one.
    """
    import io

    from PIL import Image, UnidentifiedImageError

    try:
        with egress_client(timeout=timeout, follow_redirects=False) as client:
            with client.stream("GET", url) as answer:
                if not answer.is_success:
                    return None
                data = b""
                for chunk in answer.iter_bytes():
                    data += chunk
                    if len(data) > AVATAR_BYTES:
                        return None
        with Image.open(io.BytesIO(data)) as image:
            if image.width * image.height > 4096 * 4096:
                return None
            image.thumbnail(AVATAR_SIZE)
            out = io.BytesIO()
            image.convert("RGBA").save(out, format="PNG")
    except (httpx.HTTPError, UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


def store_connection(session: Session, pending: OAuthAuthorization, tokens: Tokens, account: dict | None, *,
                     box: SecretBox, now: datetime, actor: Actor) -> Channel:
    """Seal the tokens as the channel's secret and beside it, record who it posts as, clear "reconnect needed"."""
    channel = session.scalar(select(Channel).where(Channel.id == pending.channel_id,
                                                   Channel.workspace_id == pending.workspace_id).with_for_update())
    if channel is None or channel.kind != pending.kind:
        raise AuthorizationRefused("The channel this connection was for was changed or removed meanwhile; nothing was "
                                   "stored. Start again with Connect on the channel's page.")
    _seal_tokens(channel, tokens, box=box, now=now)
    channel.connected_account = account
    channel.connected_at = now
    channel.reconnect_needed_since = None
    channel.reconnect_reason = None
    channel.refresh_lease_until = None
    channel.refresh_lease_token = None
    session.add(ChannelEvent(channel_id=channel.id, workspace_id=channel.workspace_id, at=now, actor=actor.label,
                             actor_user_id=actor.user_id, change="secret_replaced",
                             detail={"connected": True, "account": (account or {}).get("username")
                                     or (account or {}).get("name")}))
    session.flush()
    return channel


def _seal_tokens(channel: Channel, tokens: Tokens, *, box: SecretBox, now: datetime) -> None:
    channel.set_secret(box, tokens.access_token)
    channel.refresh_token_sealed = box.seal(tokens.refresh_token) if tokens.refresh_token else None
    channel.token_expires_at = tokens.expires_at
    channel.token_obtained_at = now


def forget_connection(channel: Channel) -> None:
    """What a secret typed in (or removed) by hand leaves behind: no refresh token, expiry or "reconnect needed"."""
    channel.refresh_token_sealed = None
    channel.token_expires_at = None
    channel.token_obtained_at = None
    channel.reconnect_needed_since = None
    channel.reconnect_reason = None


# -- reconnect needed ---------------------------------------------------------------------------

_c = Channel.__table__.c
_MARK = (update(Channel.__table__)
         .where(_c.id == bindparam("channel_id"), _c.reconnect_needed_since.is_(None))
         .values(reconnect_needed_since=bindparam("now", type_=UTCDateTime()),
                 reconnect_reason=bindparam("reason"))
         .returning(_c.id))


def mark_reconnect_needed(session: Session, channel_id: int, *, reason: str, now: datetime) -> bool:
    """Put the channel in "reconnect needed" (once: a channel already there keeps its first reason and time)."""
    return session.scalar(_MARK, {"channel_id": channel_id, "now": now, "reason": shown_text(reason, 500)}) is not None


# How long rows of a channel whose token was refused wait for the refresh pass to renew it.
RENEWAL_WAIT = timedelta(minutes=5)


def renew_soon(session: Session, channel_id: int, *, now: datetime) -> bool:
    """A send met its token refused, yet the channel holds a refresh token: count the token as expired now, so the
    next ``refresh-tokens`` pass renews it (under its lease, never racing it). False when nothing can renew it."""
    channel = session.get(Channel, channel_id)
    spec = oauth_spec(channel.kind) if channel is not None else None
    if (spec is None or spec.refresh != REFRESH_GRANT or not channel.refresh_token_sealed
            or channel.reconnect_needed_since is not None):
        return False
    if channel.token_expires_at is None or channel.token_expires_at > now:
        channel.token_expires_at = now
        session.flush()
    return True


def reconnect_message(channel: Channel) -> str:
    """What a row that could not go says: permanent, and what a person does about it."""
    spec = oauth_spec(channel.kind)
    why = f" ({channel.reconnect_reason})" if channel.reconnect_reason else ""
    return (f"not sent: the {network_name(channel.kind, spec)} channel {channel.name!r} needs reconnecting{why}; "
            "reconnect it on its channel page, then retry")


@dataclass(frozen=True)
class ConnectionState:
    """How a channel's connection stands, for its page, the composer and the health page."""

    state: str  # "not_oauth", "not_connected", "connected", "expiring" (no refresh: reconnect before expires_at), "reconnect_needed"
    message: str = ""
    expires_at: datetime | None = None

    @property
    def needs_a_person(self) -> bool:
        return self.state in ("reconnect_needed", "expiring")


def connection_state(channel: Channel, now: datetime) -> ConnectionState:
    spec = oauth_spec(channel.kind)
    if channel.reconnect_needed_since is not None:  # any kind whose provider said so; a new secret clears it too
        return ConnectionState("reconnect_needed", f"Reconnect needed: {channel.reconnect_reason or 'the token stopped working'}",
                               channel.token_expires_at)
    if spec is None:
        return ConnectionState("not_oauth")
    name = network_name(channel.kind, spec)
    if not channel.secret_sealed:
        return ConnectionState("not_connected", f"Not connected: connect a {name} account.")
    expires = channel.token_expires_at
    if expires is not None and spec.refresh == NO_REFRESH and expires - now <= WARN_AHEAD:
        return ConnectionState("expiring", f"Reconnect needed before {expires:%Y-%m-%d %H:%M} UTC: {name} offers no "
                                           "refresh for this token.", expires)
    return ConnectionState("connected", "Connected", expires)


# -- renewing -----------------------------------------------------------------------------------


def refresh_due_at(channel: Channel, spec: OAuthSpec) -> datetime | None:
    """When ``channel``'s token is due for renewal (for NO_REFRESH: when it is past use), or None if never."""
    if channel.token_expires_at is None:
        return None
    if spec.refresh == NO_REFRESH:
        return channel.token_expires_at
    ahead = REFRESH_AHEAD[spec.refresh]
    if channel.token_obtained_at is not None:
        ahead = min(ahead, (channel.token_expires_at - channel.token_obtained_at) / 2)
    return channel.token_expires_at - ahead


# The lease: taken only while the token is the one the pass saw due and nobody else holds the channel.
_LEASE = (update(Channel.__table__)
          .where(_c.id == bindparam("channel_id"), _c.reconnect_needed_since.is_(None),
                 _c.token_expires_at == bindparam("seen_expiry", type_=UTCDateTime()),
                 or_(_c.refresh_lease_until.is_(None), _c.refresh_lease_until <= bindparam("now", type_=UTCDateTime())))
          .values(refresh_lease_until=bindparam("lease_until", type_=UTCDateTime()), refresh_lease_token=bindparam("lease"))
          .returning(_c.id))


@dataclass
class RefreshOutcome:
    channel_id: int
    outcome: str  # refreshed, reconnect_needed, busy (another refresher has it), later (a passing failure), skipped
    message: str = ""


def refresh_connections(write_session, *, now_fn, box: SecretBox, settings: Mapping, timeout: float,
                        limit: int = 200) -> list[RefreshOutcome]:
    """Renew every token due by now (``write_session()`` opens one short write transaction; ``now_fn()`` the time).

    Idempotent: a token renewed by another pass is no longer due, a channel another refresher
    holds is left to it. Returns one outcome per channel looked at.
    """
    kinds = oauth_kinds()
    if not kinds:
        return []
    now = now_fn()
    with write_session() as session:
        candidates = [(c.id, c.kind, c.token_expires_at) for c in session.scalars(
            select(Channel).where(Channel.kind.in_(kinds), Channel.reconnect_needed_since.is_(None),
                                  Channel.token_expires_at.is_not(None),
                                  Channel.token_expires_at <= now + max(max(REFRESH_AHEAD.values()), WARN_AHEAD))
            .order_by(Channel.token_expires_at, Channel.id).limit(limit))
            if refresh_due_at(c, oauth_spec(c.kind)) is not None and refresh_due_at(c, oauth_spec(c.kind)) <= now]
    return [refresh_channel(write_session, channel_id, seen_expiry=expiry, now_fn=now_fn, box=box,
                            settings=settings, timeout=timeout) for channel_id, kind, expiry in candidates]


def refresh_channel(write_session, channel_id: int, *, seen_expiry: datetime, now_fn, box: SecretBox,
                    settings: Mapping, timeout: float) -> RefreshOutcome:
    """Renew one channel's token under its lease: take the lease, call the network, seal the answer, give it back."""
    lease = uuid.uuid4().hex
    with write_session() as session:
        now = now_fn()
        if session.scalar(_LEASE, {"channel_id": channel_id, "seen_expiry": seen_expiry, "now": now,
                                   "lease_until": now + LEASE, "lease": lease}) is None:
            return RefreshOutcome(channel_id, "busy", "renewed or being renewed by another pass")
        channel = session.get(Channel, channel_id, populate_existing=True)
        kind, config = channel.kind, dict(channel.config or {})
        spec = oauth_spec(kind)
        if spec is None:  # the kind's provider no longer connects accounts: nothing to renew
            channel.refresh_lease_until, channel.refresh_lease_token = None, None
            return RefreshOutcome(channel_id, "skipped", f"no provider connects {kind} channels")
        try:
            access = channel.secret(box)
            refresh_token = box.open(channel.refresh_token_sealed) if channel.refresh_token_sealed else None
        except SecretUnreadable as exc:
            access, refresh_token, unreadable = None, None, str(exc)
        else:
            unreadable = None
    name = network_name(kind, spec)
    failure, passing, tokens = None, False, None
    if unreadable:
        failure = unreadable
    elif spec.refresh == NO_REFRESH:
        failure = f"the {name} token expired and {name} offers no refresh: connect the account again"
    elif spec.refresh == REFRESH_GRANT and not refresh_token:
        failure = f"{name} gave no refresh token with this connection"
    else:
        try:
            tokens = _call_refresh(spec, kind, config, access, refresh_token, settings=settings, now=now_fn(),
                                   timeout=timeout)
        except _RefreshFailed as exc:
            failure, passing = exc.message, exc.passing
    with write_session() as session:
        now = now_fn()
        held = session.scalar(select(Channel).where(Channel.id == channel_id, Channel.refresh_lease_token == lease)
                              .with_for_update())
        if held is None:  # the lease ran out and another refresher took over: its answer stands
            return RefreshOutcome(channel_id, "busy", "the lease ran out before the answer came back")
        held.refresh_lease_until, held.refresh_lease_token = None, None
        if tokens is not None:
            _seal_tokens(held, tokens, box=box, now=now)
            return RefreshOutcome(channel_id, "refreshed")
        if passing and held.token_expires_at is not None and held.token_expires_at > now:
            return RefreshOutcome(channel_id, "later", failure)  # the token still works: the next pass tries again
        mark_reconnect_needed(session, channel_id, reason=f"the token could not be renewed: {failure}", now=now)
        return RefreshOutcome(channel_id, "reconnect_needed", failure)


class _RefreshFailed(Exception):
    def __init__(self, message: str, passing: bool):
        super().__init__(message)
        self.message, self.passing = message, passing


def _call_refresh(spec: OAuthSpec, kind: str, config: Mapping, access: str | None, refresh_token: str | None, *,
                  settings: Mapping, now: datetime, timeout: float) -> Tokens:
    """One renewal at the network, by the spec's rule; :class:`_RefreshFailed` saying whether a later try may work."""
    name = network_name(kind, spec)
    if spec.refresh == REFRESH_GRANT:
        app = oauth_app(settings, kind)
        if app is None:
            raise _RefreshFailed(f"{setting_names(kind)[0]} is not set, so Tickwork cannot renew {name} tokens", False)
        try:
            with _client(spec, app, timeout=timeout) as client:
                answer = client.refresh_token(_endpoint(config, spec.token_url_key, spec.token_url),
                                              refresh_token=refresh_token)
        except OAuthError as exc:
            raise _RefreshFailed(_network_words(exc, f"{name}'s token endpoint"), False) from None
        except httpx.HTTPStatusError as exc:  # 5xx: the network's trouble, not the token's
            raise _RefreshFailed(_network_words(exc, f"{name}'s token endpoint"), True) from None
        except httpx.TransportError as exc:
            raise _RefreshFailed(_network_words(exc, f"{name}'s token endpoint"), True) from None
        except ValueError as exc:
            raise _RefreshFailed(_network_words(exc, f"{name}'s token endpoint"), False) from None
        try:
            return _tokens(answer, now, keep_refresh=refresh_token)
        except ConnectionFailed as exc:
            raise _RefreshFailed(exc.message, False) from None
    # Threads and Instagram: GET <api>/refresh_access_token?grant_type=th_refresh_token|ig_refresh_token&access_token=
    base = api_base(spec, config)
    url = _endpoint(config, spec.refresh_url_key, spec.refresh_url) or (
        base.rstrip("/") + "/refresh_access_token" if base else None)
    if not url:
        raise _RefreshFailed(f"no refresh endpoint is known for {name}", False)
    try:
        with egress_client(timeout=timeout, follow_redirects=False) as client:
            answer = client.get(url, params={"grant_type": spec.refresh, "access_token": access or ""})
    except httpx.TransportError as exc:
        raise _RefreshFailed(_network_words(exc, f"{name}'s refresh endpoint"), True) from None
    if answer.status_code >= 500 or answer.status_code == 429:
        raise _RefreshFailed(f"{name}'s refresh endpoint answered {answer.status_code}", True)
    try:
        body = answer.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    if not answer.is_success or not isinstance(body, dict):
        error = body.get("error") if isinstance(body, dict) else None
        detail = error.get("message") if isinstance(error, dict) else None
        raise _RefreshFailed(f"{name}'s refresh endpoint refused ({answer.status_code})"
                             + (f": {shown_text(str(detail), 200)}" if detail else ""), False)
    try:
        return _tokens(body, now)
    except ConnectionFailed as exc:
        raise _RefreshFailed(exc.message, False) from None
