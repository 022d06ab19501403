"""The iCalendar feed: a secret ``.ics`` address per person and workspace, and the calendar page's panel for it.

| route | who | what |
|---|---|---|
| ``GET /calendar/feed/<token>.ics`` | public: the token is the proof (see :mod:`webapp.public`) | the feed; a wrong or revoked token answers 404 |
| ``POST /calendar/feed`` | any member | a new address (the previous one stops working), shown once |
| ``POST /calendar/feed/revoke`` | any member | the address stops working |

The address lives under ``TICKWORK_BASE_URL``; without it no address is made, and a feed
asked for answers 404. What the feed holds is :mod:`models.overview.feed`'s.

A feed is cheap to fetch again: it is built once per version of the workspace's schedule
(:mod:`models.overview.feed_cache`) and kept in the web process; its ``ETag`` is that version,
with ``Last-Modified``, so a calendar app that asks again with either gets a 304 when nothing
changed, without a build. Each feed token may fetch ``TICKWORK_FEED_RATE_LIMIT`` times
(``webapp.limits``), 304s included.
"""

from urllib.parse import urlsplit

from flask import Blueprint, Response, current_app, render_template, request, url_for
from flask_login import login_required
from werkzeug.http import is_resource_modified

from models.accounts.feeds import find_feed_token, issue_feed_token, live_feed_token, revoke_feed_tokens
from models.accounts.tables import Workspace
from models.core.database import db, read_session, write_session
from models.core.errors import Conflict
from models.core.runtime import runtime
from models.overview.feed import build_feed, feed_window, render_ics
from models.overview.feed_cache import FeedCache, ScheduleVersion, schedule_version
from models.timing.wall_time import InvalidTimezone
from webapp.drip_runtime import base_url
from webapp.views.context import Viewer, is_htmx, viewer

bp = Blueprint("feeds", __name__)

NO_FEED = "No calendar feed at this address. It may have been revoked or replaced; make a new one on the calendar page."
# Where each kind of feed event links to in the dashboard: the endpoint and its id argument.
LINKS = {"post": ("posts.edit", "post_id"), "rule": ("recurring.detail", "rule_id"),
         "action": ("actions.detail", "action_id"), "campaign": ("campaigns.detail", "campaign_id")}


def _public(path: str) -> str:
    """``path`` (as url_for made it) under TICKWORK_BASE_URL, which already says where Tickwork is mounted."""
    return base_url().rstrip("/") + path[len(request.script_root):]


def feed_address(raw: str) -> str:
    """The public address of the feed whose token is ``raw``."""
    return _public(url_for("feeds.feed", token=raw))


def feed_panel(v: Viewer, *, address: str | None = None, message: str | None = None,
               message_kind: str = "ok") -> dict:
    """What the calendar page's feed panel shows: whether a feed is live, and a new address once."""
    live = live_feed_token(db.session, v.workspace.id, v.user.id)
    return dict(v=v, live=live, address=address, message=message, message_kind=message_kind, base_url=base_url())


def _panel(v: Viewer, status: int = 200, **context):
    panel = feed_panel(v, **context)
    template = "calendar/_feed_panel.html" if is_htmx() else "calendar/feed.html"
    return render_template(template, **panel), status


@bp.post("/calendar/feed")
@login_required
def make_feed():
    """Make this person's feed address for this workspace (any earlier one stops working); shown once."""
    v = viewer()
    if not base_url():
        error = Conflict("Calendar feeds need TICKWORK_BASE_URL, the public address of this Tickwork; ask whoever "
                         "runs it to set it.", code="base_url_missing")
        return _panel(v, status=error.status, message=error.message, message_kind="error")
    with write_session() as session:
        raw = issue_feed_token(session, v.workspace.id, v.user.id, now=runtime().now())
    return _panel(v, address=feed_address(raw))


@bp.post("/calendar/feed/revoke")
@login_required
def revoke_feed():
    """Stop this person's feed address for this workspace from working."""
    v = viewer()
    with write_session() as session:
        revoked = revoke_feed_tokens(session, v.workspace.id, v.user.id, now=runtime().now(), why="revoked")
    return _panel(v, message="Feed address revoked: calendar apps subscribed to it get nothing more."
                  if revoked else "There was no feed address to revoke.")


def _link(kind: str, ref: int) -> str:
    endpoint, argument = LINKS[kind]
    return _public(url_for(endpoint, **{argument: ref}))


def feed_cache() -> FeedCache:
    """This app's built feeds (one cache per app, in this process)."""
    return current_app.extensions.setdefault("tickwork_feed_cache", FeedCache())


def _feed_headers(response: Response, version: ScheduleVersion) -> Response:
    response.set_etag(version.etag)
    response.last_modified = version.last_modified
    response.headers["Cache-Control"] = "private, max-age=300"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


@bp.get("/calendar/feed/<token>.ics")
def feed(token: str):
    """The workspace's calendar as iCalendar, for the person whose live token is in the address."""
    if not base_url():
        return Response(NO_FEED, 404, mimetype="text/plain")
    rt = runtime()
    host = urlsplit(base_url()).hostname
    with read_session() as session:
        found = find_feed_token(session, token)
        if found is None:
            return Response(NO_FEED, 404, mimetype="text/plain")
        workspace = session.get(Workspace, found.workspace_id)
        try:
            version = feed_cache_version(session, workspace, host=host, now=rt.now())
        except InvalidTimezone as exc:
            return Response(f"This workspace's time zone is not valid ({exc}); an admin can set it on the "
                            "settings page.", 409, mimetype="text/plain")
        if not is_resource_modified(request.environ, etag=version.etag, last_modified=version.last_modified):
            return _feed_headers(Response(status=304), version)

        def build() -> bytes:
            built = build_feed(session, workspace.id, workspace.name, workspace.timezone, now=rt.now(),
                               policy=rt.policy)
            return render_ics(built, host=host, link=_link, now=rt.now())

        cached = feed_cache().get(workspace.id, version, build)
    response = Response(cached.body, 200, mimetype="text/calendar")
    response.headers["Content-Disposition"] = 'inline; filename="tickwork.ics"'
    return _feed_headers(response, version)


def feed_cache_version(session, workspace: Workspace, *, host: str, now) -> ScheduleVersion:
    """The version of the workspace's schedule its feed shows now (raises InvalidTimezone for a broken zone)."""
    return schedule_version(session, workspace.id, workspace.name, workspace.timezone,
                            feed_window(now, workspace.timezone), host=host)
